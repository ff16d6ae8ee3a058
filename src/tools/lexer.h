#pragma once

// A small tokenizer shared by the CLI's little languages (the CREATE TABLE spec of
// table_spec.h and the scan predicates of predicate_parser.h), and errors that point at the bad
// token with its position and a caret line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace basalt::tools {

struct Token {
  enum Kind { kIdent, kNumber, kString, kSymbol, kEnd };
  Kind kind = kEnd;
  std::string text;  // Identifiers as written; strings unquoted and unescaped.
  size_t pos = 0;    // Byte offset of the token's first character in the input.
};

// Splits `input` into tokens: identifiers ([A-Za-z_][A-Za-z0-9_]*, or "double quoted"), numbers
// (an optional '-', digits, an optional fraction and exponent), 'single quoted' strings ('' is a
// quote) and the symbols ( ) , = * . < <= > >= !=. The last token is kEnd at input.size().
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view input);

// INVALID_ARGUMENT "<message> at position <pos + 1>:\n  <input>\n  <spaces>^".
absl::Status SyntaxError(std::string_view input, size_t pos, std::string_view message);

// A cursor over the tokens of one input, with the expectations parsers need. Keywords compare
// case-insensitively. Not thread-safe.
class TokenStream {
 public:
  TokenStream(std::string_view input, std::vector<Token> tokens);

  const Token& Peek(size_t ahead = 0) const;
  const Token& Next();
  bool AtEnd() const { return Peek().kind == Token::kEnd; }

  bool PeekKeyword(std::string_view keyword, size_t ahead = 0) const;
  bool PeekSymbol(std::string_view symbol) const;
  // Consumes the next token when it is `keyword` / `symbol`.
  bool ConsumeKeyword(std::string_view keyword);
  bool ConsumeSymbol(std::string_view symbol);
  absl::Status ExpectKeyword(std::string_view keyword);
  absl::Status ExpectSymbol(std::string_view symbol);
  absl::StatusOr<std::string> ExpectIdentifier(std::string_view what);
  absl::StatusOr<int64_t> ExpectInteger(std::string_view what);

  // A syntax error at the next token: "<message>, got '<token>'" (or "got end of input").
  absl::Status ErrorAtNext(std::string_view message) const;
  absl::Status ErrorAt(size_t pos, std::string_view message) const;

 private:
  std::string_view input_;
  std::vector<Token> tokens_;
  size_t next_ = 0;
};

// Case-insensitive ASCII comparison.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

}  // namespace basalt::tools
