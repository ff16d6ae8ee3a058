#include "tools/lexer.h"

#include <cctype>

#include "absl/strings/numbers.h"
#include "common/strings.h"

namespace basalt::tools {

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Scans a number starting at `i` (at a digit, or at '-' followed by a digit). Returns its end.
size_t ScanNumber(std::string_view in, size_t i) {
  if (in[i] == '-') ++i;
  while (i < in.size() && IsDigit(in[i])) ++i;
  if (i + 1 < in.size() && in[i] == '.' && IsDigit(in[i + 1])) {
    ++i;
    while (i < in.size() && IsDigit(in[i])) ++i;
  }
  if (i < in.size() && (in[i] == 'e' || in[i] == 'E')) {
    size_t j = i + 1;
    if (j < in.size() && (in[j] == '+' || in[j] == '-')) ++j;
    if (j < in.size() && IsDigit(in[j])) {
      i = j;
      while (i < in.size() && IsDigit(in[i])) ++i;
    }
  }
  return i;
}

// Scans a quoted run starting at the opening `quote`; a doubled quote stands for one.
absl::StatusOr<size_t> ScanQuoted(std::string_view in, size_t start, char quote, std::string* out) {
  for (size_t i = start + 1; i < in.size(); ++i) {
    if (in[i] != quote) {
      out->push_back(in[i]);
    } else if (i + 1 < in.size() && in[i + 1] == quote) {
      out->push_back(quote);
      ++i;
    } else {
      return i + 1;
    }
  }
  return SyntaxError(in, start, "unterminated quoted text");
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

absl::Status SyntaxError(std::string_view input, size_t pos, std::string_view message) {
  std::string caret(pos, ' ');
  // Keep tabs so the caret lines up under the same characters.
  for (size_t i = 0; i < pos && i < input.size(); ++i) {
    if (input[i] == '\t') caret[i] = '\t';
  }
  std::string line(input);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return absl::InvalidArgumentError(
      StrCat(message, " at position ", pos + 1, ":\n  ", line, "\n  ", caret, "^"));
}

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view in) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    Token t;
    t.pos = i;
    if (IsIdentStart(c)) {
      size_t j = i;
      while (j < in.size() && IsIdentChar(in[j])) ++j;
      t.kind = Token::kIdent;
      t.text = std::string(in.substr(i, j - i));
      i = j;
    } else if (IsDigit(c) || (c == '-' && i + 1 < in.size() && IsDigit(in[i + 1]))) {
      const size_t j = ScanNumber(in, i);
      t.kind = Token::kNumber;
      t.text = std::string(in.substr(i, j - i));
      i = j;
    } else if (c == '\'' || c == '"') {
      auto end = ScanQuoted(in, i, c, &t.text);
      if (!end.ok()) return end.status();
      t.kind = c == '\'' ? Token::kString : Token::kIdent;
      i = *end;
    } else if (c == '(' || c == ')' || c == ',' || c == '=' || c == '*' || c == '.') {
      t.kind = Token::kSymbol;
      t.text = std::string(1, c);
      ++i;
    } else if (c == '<' || c == '>' || c == '!') {
      const bool eq = i + 1 < in.size() && in[i + 1] == '=';
      if (c == '!' && !eq) return SyntaxError(in, i, "unexpected character '!'");
      t.kind = Token::kSymbol;
      t.text = std::string(in.substr(i, eq ? 2 : 1));
      i += eq ? 2 : 1;
    } else {
      return SyntaxError(in, i, StrCat("unexpected character '", std::string_view(&in[i], 1), "'"));
    }
    tokens.push_back(std::move(t));
  }
  Token end;
  end.kind = Token::kEnd;
  end.pos = in.size();
  tokens.push_back(std::move(end));
  return tokens;
}

TokenStream::TokenStream(std::string_view input, std::vector<Token> tokens)
    : input_(input), tokens_(std::move(tokens)) {}

const Token& TokenStream::Peek(size_t ahead) const {
  const size_t i = next_ + ahead;
  return i < tokens_.size() ? tokens_[i] : tokens_.back();
}

const Token& TokenStream::Next() {
  const Token& t = Peek();
  if (next_ + 1 < tokens_.size()) ++next_;
  return t;
}

bool TokenStream::PeekKeyword(std::string_view keyword, size_t ahead) const {
  const Token& t = Peek(ahead);
  return t.kind == Token::kIdent && EqualsIgnoreCase(t.text, keyword);
}

bool TokenStream::PeekSymbol(std::string_view symbol) const {
  return Peek().kind == Token::kSymbol && Peek().text == symbol;
}

bool TokenStream::ConsumeKeyword(std::string_view keyword) {
  if (!PeekKeyword(keyword)) return false;
  Next();
  return true;
}

bool TokenStream::ConsumeSymbol(std::string_view symbol) {
  if (!PeekSymbol(symbol)) return false;
  Next();
  return true;
}

absl::Status TokenStream::ExpectKeyword(std::string_view keyword) {
  if (ConsumeKeyword(keyword)) return absl::OkStatus();
  return ErrorAtNext(StrCat("expected ", keyword));
}

absl::Status TokenStream::ExpectSymbol(std::string_view symbol) {
  if (ConsumeSymbol(symbol)) return absl::OkStatus();
  return ErrorAtNext(StrCat("expected '", symbol, "'"));
}

absl::StatusOr<std::string> TokenStream::ExpectIdentifier(std::string_view what) {
  if (Peek().kind != Token::kIdent) return ErrorAtNext(StrCat("expected ", what));
  return Next().text;
}

absl::StatusOr<int64_t> TokenStream::ExpectInteger(std::string_view what) {
  int64_t v = 0;
  if (Peek().kind != Token::kNumber || !absl::SimpleAtoi(ToAbsl(Peek().text), &v)) {
    return ErrorAtNext(StrCat("expected ", what, " (an integer)"));
  }
  Next();
  return v;
}

absl::Status TokenStream::ErrorAtNext(std::string_view message) const {
  const Token& t = Peek();
  const std::string got =
      t.kind == Token::kEnd ? std::string("end of input") : StrCat("'", t.text, "'");
  return SyntaxError(input_, t.pos, StrCat(message, ", got ", got));
}

absl::Status TokenStream::ErrorAt(size_t pos, std::string_view message) const {
  return SyntaxError(input_, pos, message);
}

}  // namespace basalt::tools
