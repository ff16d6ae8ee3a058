#pragma once

// ConsensusMetadata: the durable Raft state of one replica that is not in its log: the hard
// state (current term, vote, commit index) and the committed configuration with the members'
// addresses. One small file per replica, replaced atomically (docs/wal.md has its byte table).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/env.h"
#include "consensus/raft_types.h"

namespace basalt {

// Everything the metadata file holds.
struct ConsensusMetadataContents {
  HardState hard_state;
  // The last committed configuration and the op index of the entry that carried it (0: the
  // initial configuration the replica was created with).
  RaftConfig committed_config;
  uint64_t committed_config_index = 0;
  // Last known "host:port" of members, by peer id.
  std::map<PeerId, std::string> peer_addresses;

  bool operator==(const ConsensusMetadataContents&) const = default;
};

// Serializes `contents` in the metadata file format (magic, version, length, CRC32C, protobuf).
std::string EncodeConsensusMetadata(const ConsensusMetadataContents& contents);
// Parses EncodeConsensusMetadata's output. DATA_LOSS naming `filename` for a wrong magic, version
// or length, a checksum mismatch, an unparsable payload, or a configuration that fails
// ValidateConfig.
absl::StatusOr<ConsensusMetadataContents> DecodeConsensusMetadata(std::string_view data,
                                                                  std::string_view filename);

// The metadata of one replica, loaded in memory, changed through the setters and persisted by
// Flush().
//
// Persistence contract (Raft safety): after changing the term or the vote, the caller must
// Flush() successfully before sending any message that depends on the change: a vote granted, a
// RequestVote or pre-vote of the new term, anything sent as leader of the new term. Otherwise a
// crash could let the replica vote twice in one term or forget a term it acted in. A failed
// Flush() leaves the file holding the previous durable contents (WriteFileAtomically), and the
// caller must not send those messages.
//
// Not thread-safe; the caller (the node shell) serializes.
class ConsensusMetadata {
 public:
  // Creates the metadata file at `path` holding `contents`, durably. ALREADY_EXISTS if a file is
  // there; INVALID_ARGUMENT if the configuration fails ValidateConfig; I/O errors. `env` is
  // borrowed and must outlive the object.
  static absl::StatusOr<std::unique_ptr<ConsensusMetadata>> Create(
      Env* env, std::string path, const ConsensusMetadataContents& contents);
  // Loads the metadata file at `path`. NOT_FOUND if missing; DATA_LOSS if corrupt; I/O errors.
  static absl::StatusOr<std::unique_ptr<ConsensusMetadata>> Load(Env* env, std::string path);

  const ConsensusMetadataContents& contents() const { return contents_; }
  const HardState& hard_state() const { return contents_.hard_state; }
  uint64_t current_term() const { return contents_.hard_state.term; }
  const PeerId& voted_for() const { return contents_.hard_state.vote; }

  // Moves to `term`, clearing the vote if the term increases. REQUIRES: term >= current_term().
  void set_current_term(uint64_t term);
  // Records a vote in the current term. REQUIRES: no other vote in this term.
  void set_voted_for(const PeerId& peer);
  void set_hard_state(const HardState& hard_state);
  void set_committed_config(const RaftConfig& config, uint64_t config_index);
  void set_peer_address(const PeerId& peer, std::string address);

  // Whether there are changes not yet flushed.
  bool dirty() const { return dirty_; }
  // Durably writes the contents if dirty(). Returns the I/O error otherwise; dirty() stays true.
  absl::Status Flush();

  const std::string& path() const { return path_; }
  // Number of writes Flush() made (tests).
  int64_t num_flushes() const { return num_flushes_; }

 private:
  ConsensusMetadata(Env* env, std::string path, ConsensusMetadataContents contents);

  Env* const env_;
  const std::string path_;
  ConsensusMetadataContents contents_;
  bool dirty_ = false;
  int64_t num_flushes_ = 0;
};

}  // namespace basalt
