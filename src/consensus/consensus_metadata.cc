#include "consensus/consensus_metadata.h"

#include <cstring>
#include <utility>

#include <glog/logging.h>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/status_macros.h"
#include "common/strings.h"
#include "consensus/raft_config.h"
#include "proto/consensus_metadata.pb.h"

namespace basalt {

namespace {

// "bsltcmet": tells a consensus metadata file from any other file.
constexpr char kMagic[8] = {'b', 's', 'l', 't', 'c', 'm', 'e', 't'};
constexpr uint32_t kFormatVersion = 1;
// magic 8, version 4, payload length 4, masked crc 4.
constexpr size_t kEnvelopeSize = 20;
// Far above any real configuration; a corrupt length cannot make us trust a huge payload.
constexpr uint32_t kMaxPayloadBytes = 16 << 20;

// CRC32C of the envelope's first 16 bytes followed by the payload.
uint32_t EnvelopeCrc(const char* envelope, std::string_view payload) {
  return crc32c::Extend(crc32c::Value(envelope, 16), payload.data(), payload.size());
}

void ToPB(const ConsensusMetadataContents& c, pb::ConsensusMetadataPB* pb) {
  pb->set_current_term(c.hard_state.term);
  pb->set_voted_for(c.hard_state.vote);
  pb->set_commit_index(c.hard_state.commit);
  for (const PeerId& p : c.committed_config.voters) pb->add_voters(p);
  for (const PeerId& p : c.committed_config.learners) pb->add_learners(p);
  for (const PeerId& p : c.committed_config.promote) pb->add_promote(p);
  pb->set_committed_config_index(c.committed_config_index);
  for (const auto& [peer, address] : c.peer_addresses) {
    pb::ConsensusMetadataPB::PeerAddressPB* a = pb->add_peer_addresses();
    a->set_peer_id(peer);
    a->set_address(address);
  }
}

ConsensusMetadataContents FromPB(const pb::ConsensusMetadataPB& pb) {
  ConsensusMetadataContents c;
  c.hard_state.term = pb.current_term();
  c.hard_state.vote = pb.voted_for();
  c.hard_state.commit = pb.commit_index();
  c.committed_config.voters.assign(pb.voters().begin(), pb.voters().end());
  c.committed_config.learners.assign(pb.learners().begin(), pb.learners().end());
  c.committed_config.promote.assign(pb.promote().begin(), pb.promote().end());
  c.committed_config_index = pb.committed_config_index();
  for (const auto& a : pb.peer_addresses()) c.peer_addresses[a.peer_id()] = a.address();
  return c;
}

}  // namespace

std::string EncodeConsensusMetadata(const ConsensusMetadataContents& contents) {
  pb::ConsensusMetadataPB pb;
  ToPB(contents, &pb);
  std::string payload;
  CHECK(pb.SerializeToString(&payload));
  std::string out(kEnvelopeSize, '\0');
  std::memcpy(out.data(), kMagic, 8);
  EncodeFixed32(out.data() + 8, kFormatVersion);
  EncodeFixed32(out.data() + 12, static_cast<uint32_t>(payload.size()));
  EncodeFixed32(out.data() + 16, crc32c::Mask(EnvelopeCrc(out.data(), payload)));
  out.append(payload);
  return out;
}

absl::StatusOr<ConsensusMetadataContents> DecodeConsensusMetadata(std::string_view data,
                                                                  std::string_view filename) {
  auto corrupt = [&](std::string_view what) {
    return absl::DataLossError(StrCat("consensus metadata ", filename, " is corrupt: ", what));
  };
  if (data.size() < kEnvelopeSize) return corrupt(StrCat("only ", data.size(), " bytes"));
  if (std::memcmp(data.data(), kMagic, 8) != 0) return corrupt("bad magic");
  const uint32_t length = DecodeFixed32(data.data() + 12);
  if (length > kMaxPayloadBytes || data.size() != kEnvelopeSize + length) {
    return corrupt(
        StrCat("payload length ", length, " does not match the file size ", data.size()));
  }
  const std::string_view payload = data.substr(kEnvelopeSize);
  if (crc32c::Unmask(DecodeFixed32(data.data() + 16)) != EnvelopeCrc(data.data(), payload)) {
    return corrupt("checksum mismatch");
  }
  const uint32_t version = DecodeFixed32(data.data() + 8);
  if (version != kFormatVersion) return corrupt(StrCat("unsupported version ", version));
  pb::ConsensusMetadataPB pb;
  if (!pb.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return corrupt("unparsable payload");
  }
  ConsensusMetadataContents c = FromPB(pb);
  absl::Status s = ValidateConfig(c.committed_config);
  if (!s.ok()) return corrupt(StrCat("bad configuration: ", s.message()));
  return c;
}

ConsensusMetadata::ConsensusMetadata(Env* env, std::string path, ConsensusMetadataContents contents)
    : env_(env), path_(std::move(path)), contents_(std::move(contents)) {}

absl::StatusOr<std::unique_ptr<ConsensusMetadata>> ConsensusMetadata::Create(
    Env* env, std::string path, const ConsensusMetadataContents& contents) {
  BASALT_RETURN_IF_ERROR_PREPEND(ValidateConfig(contents.committed_config),
                                 "creating consensus metadata");
  if (env->FileExists(path)) {
    return absl::AlreadyExistsError(StrCat("consensus metadata ", path, " already exists"));
  }
  std::unique_ptr<ConsensusMetadata> cmeta(new ConsensusMetadata(env, std::move(path), contents));
  cmeta->dirty_ = true;
  BASALT_RETURN_IF_ERROR(cmeta->Flush());
  return cmeta;
}

absl::StatusOr<std::unique_ptr<ConsensusMetadata>> ConsensusMetadata::Load(Env* env,
                                                                           std::string path) {
  std::string data;
  BASALT_RETURN_IF_ERROR(ReadFileToString(env, path, &data));
  BASALT_ASSIGN_OR_RETURN(ConsensusMetadataContents contents, DecodeConsensusMetadata(data, path));
  return std::unique_ptr<ConsensusMetadata>(
      new ConsensusMetadata(env, std::move(path), std::move(contents)));
}

void ConsensusMetadata::set_current_term(uint64_t term) {
  CHECK_GE(term, contents_.hard_state.term);
  if (term == contents_.hard_state.term) return;
  contents_.hard_state.term = term;
  contents_.hard_state.vote.clear();
  dirty_ = true;
}

void ConsensusMetadata::set_voted_for(const PeerId& peer) {
  CHECK(contents_.hard_state.vote.empty() || contents_.hard_state.vote == peer)
      << "voting for " << peer << " in term " << contents_.hard_state.term << " after voting for "
      << contents_.hard_state.vote;
  if (contents_.hard_state.vote == peer) return;
  contents_.hard_state.vote = peer;
  dirty_ = true;
}

void ConsensusMetadata::set_hard_state(const HardState& hard_state) {
  if (hard_state == contents_.hard_state) return;
  contents_.hard_state = hard_state;
  dirty_ = true;
}

void ConsensusMetadata::set_committed_config(const RaftConfig& config, uint64_t config_index) {
  contents_.committed_config = config;
  contents_.committed_config_index = config_index;
  dirty_ = true;
}

void ConsensusMetadata::set_peer_address(const PeerId& peer, std::string address) {
  contents_.peer_addresses[peer] = std::move(address);
  dirty_ = true;
}

absl::Status ConsensusMetadata::Flush() {
  if (!dirty_) return absl::OkStatus();
  BASALT_RETURN_IF_ERROR_PREPEND(
      WriteFileAtomically(env_, path_, EncodeConsensusMetadata(contents_)),
      StrCat("flushing consensus metadata ", path_));
  dirty_ = false;
  ++num_flushes_;
  return absl::OkStatus();
}

}  // namespace basalt
