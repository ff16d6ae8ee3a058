#pragma once

// RaftSimulation: a deterministic, seeded simulation of a Raft group (after FoundationDB's and
// etcd's simulation testing). N RaftCores run over a simulated network that loses, delays,
// duplicates and reorders messages and is partitioned and healed; replicas crash (losing writes
// not yet synced) and restart from their durable hard state and log; a simulated clock drives
// ticks; clients run a replicated key-value store (puts and gets, both through the log, with
// unique request ids and retries).
//
// With membership changes on, the leader is also asked, at random moments, for single-server
// changes: spare nodes join as learners, learners are promoted, voters demoted, members removed,
// leadership transferred. A removed node keeps running with its stale configuration and may be
// added back under its id with its old log, or be deleted and its slot taken by a fresh node with
// a new id and an empty log (ids are never reused with lost state, unless readd_with_empty_log
// asks for it: a replica that forgot its log while stale configurations still name it a voter
// could elect a leader that lacks committed entries).
//
// After every event the checker verifies Raft's safety properties: election safety (at most one
// leader per term over the whole history), log matching, leader completeness (every committed
// entry is in the log of every later leader, and no replica that could win an election lacks
// one), state machine safety (no two replicas apply different entries at one index), and for
// membership: every replica's configuration is that of the last configuration entry in its log,
// committed or not; every replica applies the same sequence of configurations; a leader is a
// voter of its own configuration; and a node whose removal was committed before a term never
// leads that term unless its log adds it back. At the end the network heals, every replica
// restarts (deleted nodes only if a configuration still names them), the members of the final
// configuration converge, and the checker verifies that every acknowledged request was applied
// exactly once on every replica and that the client history is linearizable in the committed
// order.
//
// The same options and seed replay the same run exactly. Not thread-safe; one run per object.

#include <cstdint>
#include <string>

#include "consensus/raft_core.h"

namespace basalt {

struct SimulationOptions {
  uint64_t seed = 0;
  int num_nodes = 3;
  int ticks = 600;                   // Faulty phase length, in ticks.
  int max_convergence_ticks = 1000;  // Budget for the healed phase.
  int substeps_per_tick = 8;         // Simulated-time resolution for message delays.
  // Fault rates (per mille).
  int loss_per_mille = 30;
  int duplicate_per_mille = 20;
  int long_delay_per_mille = 30;  // A delay of up to 5 ticks, which reorders messages.
  int partition_per_mille_per_tick = 15;
  int heal_per_mille_per_tick = 60;
  int crash_per_mille_per_tick = 10;
  int restart_per_mille_per_tick = 100;
  int crash_leader_per_mille_per_tick = 10;  // Extra crashes aimed at the current leader.
  int crash_mid_ready_per_mille = 5;         // Crash after writing a Ready but before syncing it.
  // Each seed scales each fault rate above by 0, 1, 2 or 4 (swarm testing).
  bool swarm = true;
  // Membership changes (off by default): the number of node slots beyond num_nodes, and the
  // chance per tick of proposing a random change on the leader (scaled by 1, 2 or 4 per seed).
  int spare_nodes = 0;
  int membership_per_mille_per_tick = 0;
  bool auto_promote_learners = false;
  int clients = 3;
  int max_ops = 200;
  // Collect a readable trace of every event (slower); the test enables it to explain a failure.
  bool trace = false;
  RaftOptions::TestingBug bug = RaftOptions::TestingBug::kNone;
  // Deliberately unsafe, for the checker's self-test: a removed node added back under its id
  // comes back with an empty log (its term and vote kept).
  bool readd_with_empty_log = false;
};

struct SimulationResult {
  bool ok = true;
  std::string violation;  // What went wrong, if !ok.
  std::string trace;      // The last events before the violation (if options.trace).
  // Statistics, for tuning and sanity checks of the test itself.
  int leaders_elected = 0;
  int ops_acknowledged = 0;
  int crashes = 0;
  int partitions = 0;
  // Membership changes the leader accepted (auto-promotions not counted).
  int learners_added = 0;  // Fresh nodes: spares, or new nodes in the slot of deleted ones.
  int nodes_readded = 0;   // Removed nodes added back under their id, with their old log.
  int promotions = 0;
  int demotions = 0;
  int removals = 0;
  int configs_committed = 0;    // Configuration entries committed, auto-promotions included.
  int configs_overwritten = 0;  // Uncommitted configuration entries dropped from some log.
  // Vote and pre-vote requests from nodes outside the last committed configuration.
  int removed_node_campaigns = 0;
  uint64_t final_commit_index = 0;
};

// Runs one simulation.
SimulationResult RunRaftSimulation(const SimulationOptions& options);

}  // namespace basalt
