// A broker's membership of a cluster kept in ZooKeeper (docs/cluster.md): it registers under its
// id with an ephemeral node, places new streams' streamlets over the registered brokers with an
// atomic create, and keeps a cache of brokers and placements (refreshed by watches) from which
// the request handler decides, per streamlet, whether this broker serves it. One broker at a
// time is elected controller (zk_controller.cc): it alone makes creates and deletes, which the
// others forward to it, and it chooses new leaders for a lost broker's replicated streamlets.
// Replicated streamlets (replication.cc, catch_up.cc) are copied by their leader to the
// followers of their in-sync set before a chunk is published.
//
// Threading: ZooKeeper's watcher runs on the C client's completion thread, where a synchronous
// call would deadlock; it only flags work for this class's refresher thread, which does every
// re-read, re-registers after a session expiry and creates local streams. Request threads read
// the cache under mu_ and call ZooKeeper synchronously only for creates, deletes and a stream the
// cache does not know yet.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "nearstream/cluster/placement.h"
#include "nearstream/common/mutex.h"
#include "nearstream/common/status.h"
#include "nearstream/common/thread_annotations.h"
#include "nearstream/net/client.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/file_syncer.h"
#include "nearstream/storage/held_appends.h"
#include "nearstream/storage/stream_store.h"
#include "nearstream/storage/txn_mirror.h"

// ZooKeeper's C client handle, declared as zookeeper/zookeeper.h does (its name, not ours).
// NOLINTNEXTLINE(bugprone-reserved-identifier)
typedef struct _zhandle zhandle_t;

namespace nearstream::cluster {

// How long a copy's seal holds on its source from each renewal (a move's or a catch-up's, the
// segments' copy and the transaction files' pages alike) before the source lifts it itself.
inline constexpr uint32_t kMoveSealMs = 30000;
// How long a leader waits for a follower's answer before it counts the follower as failed (and
// removes it from the in-sync set): a stopped (SIGSTOP) or partitioned follower holds the
// streamlet's appends this long, as Kafka's replica.lag.time.max.ms bounds a stalled follower.
inline constexpr int kReplicaTimeoutMs = 10000;
// Finished segment files of `async` copies that may wait for their sync (all of a broker's
// copies together) before a follower's next switch to a new segment file waits for one.
inline constexpr size_t kCopySyncPending = 4;

struct ClusterOptions {
  std::string zookeeper;  // host:port[,...][/root]
  uint32_t broker_id = 0;
  std::string host;  // this machine's name
  int session_timeout_ms = 6000;
  int connect_timeout_ms = 30000;  // Start() gives up after this long without ZooKeeper
  // A follower catching up copies the whole streamlet instead of keeping what its leader's epoch
  // history proves equal (docs/protocol.md, "Catching up by leader epoch").
  bool whole_catch_up = false;
  // As a leader, send in-sync followers views of what its readers see (ReplicaPublished), so
  // that they serve follower reads (docs/cluster.md, "Follower reads"). A follower keeps a copy
  // in memory only while views come, so without them it costs nothing.
  bool follower_reads = false;
};

class ZkCluster : public storage::TxnMirror {
 public:
  // `store` must outlive the cluster.
  ZkCluster(ClusterOptions options, storage::StreamStore* store);
  ~ZkCluster() override;
  ZkCluster(const ZkCluster&) = delete;
  ZkCluster& operator=(const ZkCluster&) = delete;

  // Connects (retrying until connect_timeout_ms), creates the cluster's nodes when missing,
  // registers this broker, reads brokers and streams, creates their local copies and
  // starts the refresher. CLUSTER_UNAVAILABLE when ZooKeeper stays out of reach.
  // `address` is where clients reach this broker (host:port).
  Status Start(const std::string& address) NS_EXCLUDES(mu_, zk_mu_);
  void Stop() NS_EXCLUDES(mu_, zk_mu_);

  uint32_t broker_id() const { return options_.broker_id; }
  // False until Start() has read the cluster's brokers and placements. The server listens
  // before (the registration needs the bound port), but serves no streamlet meanwhile: its
  // local data may be a copy another broker has taken over while it was down.
  bool joined() const { return joined_.load(std::memory_order_acquire); }

  // Runs after a stream deleted through another broker left `store` (the server wakes the
  // stream's parked fetches). Set before Start().
  void OnStreamDeleted(std::function<void(const std::shared_ptr<storage::Stream>&)> callback) {
    on_deleted_ = std::move(callback);
  }

  // Runs after this broker let a streamlet of `stream` go (it moved to another broker) and
  // removed its copy, or stopped serving follower reads of one (it left the in-sync set, was
  // promoted, or its copy in memory was dropped): the server ends the stream's push
  // subscriptions and wakes its parked fetches, whose readers then hear NOT_OWNER or find the
  // streamlet where it is served now. Set before Start().
  void OnStreamletLost(std::function<void(const std::shared_ptr<storage::Stream>&)> callback) {
    on_lost_ = std::move(callback);
  }

  // Runs after a follower's copy in memory published more (a view applied: follower reads),
  // so the server wakes the streamlet's parked fetches. Set before Start().
  void OnPublished(
      std::function<void(const std::shared_ptr<storage::Stream>&, uint32_t)> callback) {
    on_published_ = std::move(callback);
  }

  // ---- moving a streamlet (docs/protocol.md, "Moving a streamlet") ---------------------------
  // SealStreamlet on the owner: seals `s` (streamlet `id` of `stream`) for `seal_ms` and returns
  // its tail; 0 lifts the seal. INVALID_TXN_STATE while the stream has open or prepared
  // transactions. When the seal runs out, the refresher asks ZooKeeper who owns the streamlet.
  Result<storage::Position> Seal(storage::Stream& stream, uint32_t id, storage::Streamlet& s,
                                 uint32_t seal_ms) NS_EXCLUDES(mu_);
  // MoveStreamlet on the target: seals the streamlet on its owner, copies its chunks to the same
  // positions here, and switches the owner in ZooKeeper with one compare-and-set.
  Status MoveIn(const std::string& name, uint32_t id) NS_EXCLUDES(mu_, zk_mu_);
  // ReplicaMove on the target (replica_move.cc; docs/protocol.md, "Moving a replica"): this
  // broker takes broker `from`'s place among the replicas of streamlet `id`, and its leadership
  // when `from` leads it. `swap` (MoveStreamlet to a follower): this broker, a replica already,
  // becomes the leader and `from`, the leader, stays a follower.
  Status MoveReplica(const std::string& name, uint32_t id, uint32_t from, bool swap)
      NS_EXCLUDES(mu_, zk_mu_);

  // A write or flush of streamlet `id` of `name`, which this broker leads, failed (a full or
  // failing disk), or a transactional write of its scope did: the catch-up thread asks an
  // in-sync follower to take the leadership over (leader_handover.cc). Called by request
  // workers; cheap.
  void NoteStorageFailure(const std::string& name, uint32_t id) NS_EXCLUDES(mu_);

  // ---- replication (replication.cc; docs/cluster.md, "Replication") ---------------------------
  // The leader's step between appends' writes and their publish. SendReplicas sends each
  // batch's chunks (held chunks of one streamlet it leads, in write order) to every other
  // in-sync replica of that streamlet: every batch to every follower in one gathered write each,
  // as the newest flight of `pipe`. AwaitReplicas awaits the answers to the oldest flight and
  // returns one status per batch of it. A follower that fails leaves the in-sync set in
  // ZooKeeper first (compare-and-set); NOT_OWNER when this broker is no longer the leader,
  // CLUSTER_UNAVAILABLE when the in-sync set cannot be changed.
  //
  // A request worker keeps one pipeline: while a flight's answers are on their way it writes
  // and sends the next batch. The pipeline has a connection of its own to each follower, which
  // carries every streamlet's chunks for that follower, answered in the order sent: a flight's
  // chunks for one follower go in one write. Only its worker uses a pipeline, so its
  // connections take no lock. A slot's chunks never travel on two pipelines at once (its slot
  // lock is held until they are answered), so no follower sees them out of order.
  struct ReplicaBatch {
    std::string name;
    uint32_t id;
    std::vector<storage::HeldAppends::Chunk> chunks;
  };
  struct TxnWritesSent;  // a Send's writes awaiting their answers (txn_replication.cc)
  // A leader's connection to one follower for one streamlet's transactions' writes (`links_`,
  // Mirror; a Client serves one caller).
  struct ReplicaLink {
    std::mutex mu;
    std::optional<net::Client> client;
    // Counts the connections made (guarded by `mu`): answers are read from the connection their
    // requests went out on, or not at all.
    uint64_t connection = 0;
  };
  class ReplicaPipeline {
   public:
    bool empty() const { return flights_.empty(); }
    size_t size() const { return flights_.size(); }

    // The pipeline's connection to one follower.
    struct FollowerLink {
      std::optional<net::Client> client;
      // Counts the connections made: answers are read from the connection their requests went
      // out on, or not at all.
      uint64_t connection = 0;
      // Of flights_, those that sent on it: with any, a connection that failed is not made
      // again (later requests must not overtake earlier ones on a new connection).
      size_t flights = 0;
    };

   private:
    friend class ZkCluster;
    struct Send {
      size_t batch;
      uint32_t follower;
      FollowerLink* link;
      Status status;
      uint64_t first_id = 0;
      uint64_t connection = 0;
    };
    struct Flight {
      std::vector<std::string> names;  // per batch
      std::vector<uint32_t> ids;
      std::vector<uint64_t> epochs;
      std::vector<size_t> counts;
      std::vector<Status> out;
      std::vector<Send> sends;
      // kReplicaTimeoutMs after it was sent (monotonic ms): every answer of the flight is due by
      // then, however long the flights before it and its other sends were awaited.
      int64_t deadline_ms = 0;
    };
    std::deque<Flight> flights_;
    // This pipeline's connection to each follower (by broker id), which carries the chunks of
    // every streamlet it replicates to that follower: a flight's chunks for one follower go in
    // one write and come back answered in one read, however many streamlets they are of.
    std::map<uint32_t, FollowerLink> to_follower_;
  };
  void SendReplicas(ReplicaPipeline* pipe, const std::vector<ReplicaBatch>& batches)
      NS_EXCLUDES(mu_, zk_mu_);
  std::vector<Status> AwaitReplicas(ReplicaPipeline* pipe) NS_EXCLUDES(mu_, zk_mu_);
  // A follower's side of ReplicaAppend, a run of chunks at a time: the chunks of consecutive
  // ReplicaAppends that continue each other in one segment of a copy (a leader's batch) go to
  // its file in one write, which costs the page cache less CPU per byte than one write per chunk
  // (docs/cluster.md, "Replication").
  class ReplicaWrites;  // below
  // Checks the chunk (its checksum, where it goes) and adds it to the last run of `w`, or to a
  // new one after writing the last when the chunk does not continue it. Returns the index of
  // the run whose outcome answers the chunk, or the chunk's own error. The chunk's bytes must
  // stay where they are until the run is written.
  Result<size_t> StageReplica(const net::ReplicaAppendRequest& m, ReplicaWrites* w)
      NS_EXCLUDES(mu_, zk_mu_);
  // Writes the runs of `w` not written yet, each under its copy's lock after checking again
  // that the sender leads the streamlet at its epoch, at the same position as the leader's copy.
  // Returns every run's outcome in order and empties `w`.
  std::vector<Status> WriteReplicas(ReplicaWrites* w) NS_EXCLUDES(mu_, zk_mu_);
  // ---- follower reads (follower_reads.cc; docs/cluster.md, "Follower reads") -----------------
  // A follower's side of ReplicaPublished: the checks of a ReplicaAppend, then the view applied to
  // its copy in memory. POSITION_OUT_OF_RANGE when the view does not continue the last one
  // applied (the leader then sends a whole view).
  Status AcceptPublished(const net::ReplicaPublishedRequest& m) NS_EXCLUDES(mu_, zk_mu_);
  // Whether this broker may serve a read of another broker's streamlet from its copy: it is an
  // in-sync follower of it and its copy in memory holds a whole view of the current leader's.
  bool ServesFollowerRead(const std::string& stream, uint32_t streamlet) const NS_EXCLUDES(mu_);

  // The leader's side of ReplicaJoin: the follower's copy ends at the sealed tail, so it joins
  // the in-sync set (compare-and-set) and the seal is lifted.
  Status JoinIsr(const net::ReplicaJoinRequest& m) NS_EXCLUDES(mu_, zk_mu_);
  // The leader's side of ReplicaCheck (epoch_catch_up.cc): its epoch history and segments.
  Result<net::ReplicaCheckResponse> CheckReplica(const net::ReplicaCheckRequest& m)
      NS_EXCLUDES(mu_, zk_mu_);

  // ---- replicated transactions (txn_replication.cc; docs/cluster.md, "Replication") ---------
  // The leader's side: sends a streamlet scope's file writes to every other in-sync replica,
  // one at a time and in order per follower; a follower that fails leaves the in-sync set
  // first. When that cannot be done, the failed followers are remembered, and every later call
  // tries again before it sends anything (storage::TxnMirror).
  Status Mirror(const std::string& name, uint32_t id,
                const std::vector<storage::TxnFileOp>& ops) override NS_EXCLUDES(mu_, zk_mu_);
  // Mirror's halves (storage::TxnMirror): Send stops before the followers' answers, which
  // Finish awaits; a follower that failed leaves the in-sync set in Finish.
  std::unique_ptr<storage::TxnMirror::Sent> Send(
      const std::string& name, uint32_t id, const std::vector<storage::TxnFileOp>& ops) override
      NS_EXCLUDES(mu_, zk_mu_);
  Status Finish(std::unique_ptr<storage::TxnMirror::Sent> sent) override NS_EXCLUDES(mu_, zk_mu_);
  // A follower's side of ReplicaTxn: the checks of a ReplicaAppend, then the write.
  Status AcceptReplicaTxn(const net::ReplicaTxnRequest& m) NS_EXCLUDES(mu_, zk_mu_);
  // The leader's side of ReplicaTxnFiles: a page of the scope's files, within `max_bytes`.
  Result<net::ReplicaTxnFilesResponse> TxnFiles(const net::ReplicaTxnFilesRequest& m,
                                                size_t max_bytes) NS_EXCLUDES(mu_, zk_mu_);

  // OK when this broker stores `streamlet` of `stream`, or when the cluster does not place the
  // stream (a local stream from before the broker joined); NOT_OWNER / BROKER_UNAVAILABLE naming
  // the owner otherwise. Called per streamlet of every request: a lookup under mu_.
  Status CheckOwner(const std::string& stream, uint32_t streamlet) const NS_EXCLUDES(mu_);

  // The local stream `name`, first creating it from its placement when this broker has not made
  // it yet (created through another broker, before the watch fired). Null when the cluster has no
  // such stream; CLUSTER_UNAVAILABLE when ZooKeeper, which alone could tell, is out of reach.
  Result<std::shared_ptr<storage::Stream>> Find(const std::string& name) NS_EXCLUDES(mu_, zk_mu_);

  // Placement changes, made by the controller in ZooKeeper: this broker makes them when it is
  // the controller and forwards them to the controller otherwise, unless `forwarded` (the
  // request came from another broker: CLUSTER_UNAVAILABLE then). CLUSTER_UNAVAILABLE without
  // ZooKeeper or a reachable controller.
  Status CreateStream(const storage::StreamConfig& config, bool forwarded) NS_EXCLUDES(mu_, zk_mu_);
  // Returns the local stream it deleted (null when this broker held none).
  Result<std::shared_ptr<storage::Stream>> DeleteStream(const std::string& name, bool forwarded)
      NS_EXCLUDES(mu_, zk_mu_);

  // Gauges for the broker's metrics (docs/cluster.md, "Metrics"): 1 while this broker is the
  // controller (the cluster's sum is 1, as Kafka's ActiveControllerCount), 1 while its ZooKeeper
  // session is connected, and the brokers registered as it last read them.
  struct Gauges {
    uint64_t controller = 0;
    uint64_t connected = 0;
    uint64_t brokers = 0;
    // Catch-ups of followers (counters): bytes copied from leaders, and bytes of the old copy
    // kept because the epoch histories proved them equal to the leader's.
    uint64_t catch_up_copied_bytes = 0;
    uint64_t catch_up_kept_bytes = 0;
  };
  Gauges gauges() const NS_EXCLUDES(mu_);

  // Every stream the cluster places (sorted), and one's configuration.
  std::vector<std::string> List() NS_EXCLUDES(mu_, zk_mu_);
  Result<storage::StreamConfig> Describe(const std::string& name) NS_EXCLUDES(mu_, zk_mu_);
  // Reads a requested stream the cache does not know yet (created through another broker).
  net::ClusterMetadataResponse Metadata(const std::vector<std::string>& streams)
      NS_EXCLUDES(mu_, zk_mu_);

 private:
  static void Watcher(zhandle_t* zh, int type, int state, const char* path, void* context);
  std::string Path(const std::string& relative) const { return root_ + relative; }

  // ZooKeeper session: connect and wait, ensure nodes, register.
  Status Connect() NS_EXCLUDES(mu_, zk_mu_);
  Status EnsureNodes() NS_EXCLUDES(zk_mu_);
  Status Register() NS_EXCLUDES(zk_mu_);
  // The children of a node under the root; `watch` sets a watch for their changes.
  Result<std::vector<std::string>> Children(const std::string& relative, bool watch)
      NS_EXCLUDES(zk_mu_);
  // Re-reads brokers or streams (setting the watches again) into the cache. A stream missing from
  // ZooKeeper without a deletion seen by a watch (deleted while this broker's session had
  // expired, or an ensemble that lost its data) leaves the cache but keeps its local data.
  Status ReadBrokers() NS_EXCLUDES(mu_, zk_mu_);
  Status ReadStreams() NS_EXCLUDES(mu_, zk_mu_);
  // Reads one stream's record into the cache and watches its node (a deletion removes the local
  // copy); false when the stream does not exist.
  Result<bool> ReadStream(const std::string& name) NS_EXCLUDES(mu_, zk_mu_);
  // Removes the local copies of the streams in deleted_.
  void DeleteLocalStreams() NS_EXCLUDES(mu_);
  // Creates the local copy of every cached stream that has none yet. Every broker holds one of
  // every placed stream (a request for any streamlet then finds the stream, and another broker's
  // streamlet answers NOT_OWNER); only the owned streamlets ever take data.
  void CreateLocalStreams() NS_EXCLUDES(mu_);
  void RefreshLoop() NS_EXCLUDES(mu_, zk_mu_);
  // Re-reads the streams whose node changed (a streamlet moved) and lets go of the streamlets
  // this broker no longer owns.
  void RereadChanged() NS_EXCLUDES(mu_, zk_mu_);
  // Seals that ran out: this broker still owns the streamlet (lift) or not (let go), as
  // ZooKeeper says; kept while it is out of reach.
  void CheckSeals() NS_EXCLUDES(mu_, zk_mu_);
  bool SealDueLocked(int64_t now_ms) const NS_REQUIRES(mu_);
  // ---- the controller (zk_controller.cc) ------------------------------------------------------
  // Learns who the controller is and watches its node; runs for it when there is none (one
  // multi: create the ephemeral /controller and bump /controller_epoch).
  Status Elect() NS_EXCLUDES(mu_, zk_mu_);
  // Where a placement change goes: OK with *self set when this broker is the controller, OK with
  // *controller (its registration) when another is, CLUSTER_UNAVAILABLE when none can take it.
  Status ControllerFor(bool forwarded, bool* self, BrokerRecord* controller) NS_EXCLUDES(mu_);
  // Sends a CreateStream or DeleteStream (`body`) to `controller`, marked forwarded.
  Status Forward(const BrokerRecord& controller, net::Opcode opcode, const Bytes& body);
  // As the controller: creates /streams/<name> with `*data`, or deletes it when `data` is null,
  // in one multi with a check that /controller_epoch still has the version this broker's
  // election gave it (a deposed controller changes nothing).
  Status FencedChange(const std::string& name, const std::string* data) NS_EXCLUDES(mu_, zk_mu_);
  // A fenced change found /controller_epoch moved on: gives the role up (the refresher runs
  // the election again) and answers CLUSTER_UNAVAILABLE.
  Status Deposed() NS_EXCLUDES(mu_);
  // As the controller: logs the streamlets of brokers that left (`before` less brokers_), which
  // are unavailable until those brokers return.
  void ReportLostBrokers(const std::vector<BrokerRecord>& before) NS_EXCLUDES(mu_);
  // Logs, per owner that is not registered (of `only`, or of all when empty), its streamlets.
  void ReportUnavailable(const std::set<uint32_t>& only) NS_EXCLUDES(mu_);
  // After a create or delete made here or by the controller: the stream's node read (and
  // watched) and its local copy made, or the local copy removed.
  void AfterCreate(const std::string& name) NS_EXCLUDES(mu_, zk_mu_);
  Result<std::shared_ptr<storage::Stream>> AfterDelete(const std::string& name) NS_EXCLUDES(mu_);

  // ---- replication (replication.cc) -----------------------------------------------------------
  // Puts a stream record read from ZooKeeper into the cache, unless the cache holds a newer one,
  // and changes this broker's part in each replicated streamlet whose leader changed: a follower
  // that becomes leader loads its copy (as recovery does) before the record is installed, so no
  // request reaches the streamlet before its chunks are there; a leader that is no longer one
  // forgets its chunks in memory (the files stay) and lets go of its readers after.
  void Install(const std::string& name, StreamRecord record) NS_EXCLUDES(mu_);
  // As the controller: for every replicated streamlet whose leader is not registered, the
  // first registered member of its in-sync set becomes leader with the next epoch (one
  // compare-and-set of the stream's node, fenced by the controller epoch). Streamlets with no
  // such member keep their leader: they are unavailable until one of them returns.
  void ElectLeaders() NS_EXCLUDES(mu_, zk_mu_);
  // Writes `record` to its stream's node if the node's version is still the one `record` was
  // read at, and, when `fenced`, this broker still holds its controller epoch. OK with *stale
  // set when another change came first (read again and decide again).
  Status SetStreamNode(const std::string& name, const StreamRecord& record, bool fenced,
                       bool* stale) NS_EXCLUDES(mu_, zk_mu_);
  // The stream's node as ZooKeeper has it now (watched when `watch`); nullopt when it does not
  // exist.
  Result<std::optional<StreamRecord>> FetchStream(const std::string& name, bool watch)
      NS_EXCLUDES(zk_mu_);
  // The leader's side when followers failed: removes `failed` from the in-sync set of streamlet
  // `id` (epoch `epoch`), retrying while ZooKeeper is out of reach and this broker's session
  // lives.
  Status ShrinkIsr(const std::string& name, uint32_t id, uint64_t epoch,
                   const std::vector<uint32_t>& failed) NS_EXCLUDES(mu_, zk_mu_);
  // ---- a leader whose disk failed (leader_handover.cc) ------------------------------------
  // On the catch-up thread: for each streamlet noted above that this broker still leads, a
  // MoveStreamlet to an in-sync follower (a swap: it leads, this broker follows and catches up
  // once its disk takes writes again). Returns when each was tried once; `retry_at` spaces the
  // tries of one that failed.
  void HandOverFailedLeaderships(std::map<std::pair<std::string, uint32_t>, int64_t>* retry_at)
      NS_EXCLUDES(mu_, zk_mu_);

  // ---- a follower catching up (catch_up.cc) ---------------------------------------------------
  // The ns-catchup thread: copies again, one at a time, every streamlet this broker follows and
  // is not in sync for, from its registered leader, and joins its in-sync set; and hands over
  // the streamlets it leads whose disk failed (HandOverFailedLeaderships).
  void CatchUpLoop() NS_EXCLUDES(mu_, zk_mu_);
  // Retention on followers (follower_retention.cc): removes the segment files of followed
  // in-sync streamlets that their leader no longer retains. Runs on the catch-up thread.
  void TrimFollowerCopies() NS_EXCLUDES(mu_, zk_mu_);
  bool FollowsInSyncLocked(const StreamRecord& record, const std::string& name, uint32_t id) const
      NS_REQUIRES(mu_);
  Status CatchUp(const std::string& name, uint32_t id) NS_EXCLUDES(mu_, zk_mu_);
  // A new copy of streamlet `id` from its leader, made as a move's target makes one (this
  // broker's old files go first), left as files. It returns with the leader's seal held at
  // `tail` through `client`: the caller joins the in-sync set, takes the leadership over, or
  // lifts the seal. On failure the seal is lifted.
  struct LeaderCopy {
    uint32_t leader = 0;
    uint64_t epoch = 0;                 // the leader epoch the copy was made at
    std::string at;                     // "broker N at ADDRESS", for messages
    std::optional<net::Client> client;  // connected to the leader, which it sealed
    storage::Position tail;             // where the copy ends: the sealed tail
  };
  Result<LeaderCopy> CopyFromLeader(const std::string& name, uint32_t id) NS_EXCLUDES(mu_, zk_mu_);
  static void LiftSeal(LeaderCopy& copy, const std::string& name, uint32_t id);
  // ---- catching up by leader epoch (epoch_catch_up.cc) ----------------------------------------
  // A new leader of `s` at `epoch` records where its epoch starts (the next group id).
  static void StartLeaderEpoch(const std::string& name, uint32_t id, storage::Streamlet& s,
                               uint64_t epoch);
  // Before a catch-up's copy: drops what this copy of `s` holds that its leader's does not (by
  // the epoch histories, then lengths and chunk checks) and returns where the copy goes on. An
  // error when it cannot tell (no history): the caller copies the whole streamlet.
  Result<storage::Position> KeepWhatMatches(net::Client& leader, const std::string& name,
                                            uint32_t id, storage::Streamlet& s, uint64_t epoch_now)
      NS_EXCLUDES(mu_);
  // Under the leader's seal, after the copy: every segment as long as the leader's (a longer one
  // cut, a shorter one an error), no other segment, and the leader's history taken over.
  Status MatchSealedLeader(net::Client& leader, const std::string& name, uint32_t id,
                           storage::Streamlet& s) NS_EXCLUDES(mu_);
  // A replica move's changes of the stream's node, each one compare-and-set retried on a newer
  // version: `change` edits the record read and says whether to write it (false: nothing to
  // change; an error stops it); the record written, or read, is installed.
  Status ChangeReplicas(const std::string& name,
                        const std::function<Result<bool>(StreamRecord& record)>& change)
      NS_EXCLUDES(mu_, zk_mu_);
  // Takes this broker out of the in-sync set of streamlet `id` (a copy that may miss chunks:
  // a restart); OK when it is not in it.
  Status LeaveIsr(const std::string& name, uint32_t id) NS_EXCLUDES(mu_, zk_mu_);
  // At start, before serving: for every replicated streamlet this broker still leads with
  // followers in its in-sync set, the set becomes this broker alone. Its files may end with a
  // chunk it wrote but had not copied to them when it stopped, which loading publishes; they
  // copy the streamlet again before they are in sync.
  Status ClaimLeadersIsr() NS_EXCLUDES(mu_, zk_mu_);
  // Removes the segment files of a follower's copy in `dir`.
  static void RemoveCopy(const std::string& dir);

  // Forgets every chunk of `s` here and removes its segment files.
  static void DropLocalCopy(storage::Streamlet& s);
  // Removes the local copy of streamlet `id` of `stream` and tells the server.
  void LetGo(const std::string& name, uint32_t id) NS_EXCLUDES(mu_);
  // The target's side of a move: the chunks from `source`, as segment files of the same ids and
  // offsets in `into`'s directory, then loaded. Copies most of it before sealing the streamlet
  // on the source, the rest up to the sealed tail (`*sealed_tail`) after, renewing the seal.
  // `load`: then loads the copy into `into` (a move); a follower's copy stays files.
  // `from`: where the copy starts (all-zero: the earliest chunk); bytes `into`'s files hold
  // already are not written again.
  // `*copied` (when given) gets the bytes written.
  Status CopyStreamlet(net::Client& source, const std::string& name, uint32_t id,
                       storage::Streamlet& into, storage::Position* sealed_tail, bool load,
                       storage::Position from = {}, uint64_t* copied = nullptr);
  // The compare-and-set of the stream's node: owner of `id` from `from` to this broker. When
  // ZooKeeper is lost in the middle, reads the outcome back; `*unknown` when it cannot tell.
  Status SwitchOwner(const std::string& name, uint32_t id, uint32_t from, bool* unknown)
      NS_EXCLUDES(mu_, zk_mu_);

  const ClusterOptions options_;
  std::string address_;
  std::string servers_;
  std::string root_;
  storage::StreamStore* const store_;
  std::function<void(const std::shared_ptr<storage::Stream>&)> on_deleted_;
  std::function<void(const std::shared_ptr<storage::Stream>&)> on_lost_;
  std::function<void(const std::shared_ptr<storage::Stream>&, uint32_t)> on_published_;

  // The handle; replaced after a session expiry. Held across every call that uses it.
  Mutex zk_mu_;
  zhandle_t* zh_ NS_GUARDED_BY(zk_mu_) = nullptr;

  mutable Mutex mu_;
  CondVar changed_;  // a watch fired, the session changed state, or Stop()
  bool connected_ NS_GUARDED_BY(mu_) = false;
  bool expired_ NS_GUARDED_BY(mu_) = false;
  bool brokers_dirty_ NS_GUARDED_BY(mu_) = false;
  bool streams_dirty_ NS_GUARDED_BY(mu_) = false;
  bool stopping_ NS_GUARDED_BY(mu_) = false;
  std::vector<BrokerRecord> brokers_ NS_GUARDED_BY(mu_);  // ascending id
  std::map<std::string, StreamRecord> streams_ NS_GUARDED_BY(mu_);
  // Streams whose node a watch saw deleted (through another broker): their local copies go.
  std::set<std::string> deleted_ NS_GUARDED_BY(mu_);
  // Streams whose node a watch saw change (a placement change): re-read by the refresher.
  std::set<std::string> changed_streams_ NS_GUARDED_BY(mu_);
  // The controller's election: a watch on /controller fired (or the session was renewed).
  bool controller_dirty_ NS_GUARDED_BY(mu_) = true;
  uint32_t controller_id_ NS_GUARDED_BY(mu_) = net::kNoController;
  // Set while this broker's session holds /controller; the version of /controller_epoch its
  // election wrote, which each of its placement changes checks.
  bool is_controller_ NS_GUARDED_BY(mu_) = false;
  int32_t epoch_version_ NS_GUARDED_BY(mu_) = -1;
  // Streamlets this broker sealed for a move, and when each seal runs out (monotonic ms).
  std::map<std::pair<std::string, uint32_t>, int64_t> seals_ NS_GUARDED_BY(mu_);

  // ns-views' connection to one follower for one streamlet (follower_reads.cc), its own so
  // that a view never waits behind a batch of chunks, nor a batch behind a view.
  struct ViewLink {
    std::optional<net::Client> client;
    // The publish version of the last view the follower applied; 0: the next view is whole.
    uint64_t told = 0;
    uint64_t told_epoch = 0;  // the leader epoch `told` is of
  };
  // A view of streamlet `id` for the follower at the other end of `link`: the changes since
  // what it applied last, whole when that is of another epoch or unknown; none when nothing
  // changed.
  std::optional<net::ReplicaPublishedRequest> ViewFor(const std::string& name, uint32_t id,
                                                      uint64_t epoch, const ViewLink& link);
  // The follower's answer to a view: what it applied now, or a whole view next.
  static void ViewTold(ViewLink& link, const net::ReplicaPublishedRequest& m, const Status& answer);
  // The ns-views thread: views for followers of quiet streamlets, and whole ones.
  void ViewsLoop() NS_EXCLUDES(mu_, zk_mu_);
  // Per stream, streamlet and follower: the connections that carry transactions' writes.
  std::map<std::tuple<std::string, uint32_t, uint32_t>, std::shared_ptr<ReplicaLink>> links_
      NS_GUARDED_BY(mu_);
  // A follower's copy of one streamlet: the segment file it appends to, and the transaction
  // part file it appended to last (kept open: a transaction's chunks go to it one after the
  // other). `mu` is held for a whole ReplicaAppend or ReplicaTxn, and by a promotion, a catch-up
  // and a give-up, which close both files (Close) before they load or replace the copy.
  struct FollowerCopy {
    std::mutex mu;
    std::unique_ptr<storage::WritableFile> file;
    storage::Position file_at;  // the segment `file` holds and where its next byte goes
    std::unique_ptr<storage::WritableFile> txn_file;
    std::string txn_file_name;
    // The copy in memory (follower reads): valid once a whole view of the leader of
    // `mirror_epoch` applied, up to the view of `mirror_version`. Set under `mu`; read by
    // ServesFollowerRead without it.
    std::atomic<bool> mirror_valid{false};
    uint64_t mirror_epoch = 0;
    uint64_t mirror_version = 0;
    // Forgets the copy in memory (its files stay): no follower read until a whole view applies.
    // Returns whether it served reads (their push subscriptions must then end).
    bool ResetMirror(storage::Streamlet& s) {
      const bool was = mirror_valid.exchange(false, std::memory_order_acq_rel);
      (void)s.DropAll(/*reopen=*/false);
      return was;
    }
    void Close() {
      file.reset();
      txn_file.reset();
      txn_file_name.clear();
      NoteSyncFailure(Status::Ok());  // the copy is checked again (catch-up) or given up
    }
    // A finished segment file whose sync failed off the ns-replica thread (copy_syncer_): the
    // next chunk is refused with it, so the leader takes this broker out of the in-sync set and
    // it catches up, as when the sync ran inline. Its own mutex: the syncer's thread reports
    // while a write or a promotion holds `mu`.
    void NoteSyncFailure(Status s) {
      std::lock_guard<std::mutex> lock(sync_failure_mu);
      sync_failure = std::move(s);
    }
    Status SyncFailure() {
      std::lock_guard<std::mutex> lock(sync_failure_mu);
      return sync_failure;
    }
    std::mutex sync_failure_mu;
    Status sync_failure;
  };
  // What a leader's write to a follower lands in (StageReplica, AcceptReplicaTxn).
  struct FollowerTarget {
    std::shared_ptr<storage::Stream> stream;
    storage::Streamlet* streamlet = nullptr;
    std::shared_ptr<FollowerCopy> copy;
  };
  // Before a write from a leader: the local stream and streamlet, and the copy whose lock the
  // write holds; reads the stream's node first when the sender names a newer epoch.
  Result<FollowerTarget> FollowerWriteTarget(const std::string& name, uint32_t streamlet,
                                             uint64_t leader_epoch) NS_EXCLUDES(mu_, zk_mu_);
  // Consecutive chunks of one segment of a copy, from one leader at one epoch (ReplicaWrites).
  struct ReplicaRun {
    FollowerTarget target;
    std::string stream;
    uint32_t streamlet = 0;
    uint32_t leader = 0;
    uint64_t leader_epoch = 0;
    storage::Position at;  // the first chunk's
    uint32_t end = 0;      // the offset after the last chunk
    std::vector<iovec> chunks;
    std::optional<Status> outcome;  // once written
  };
  // One run: the checks under the copy's lock, then the write.
  Status WriteReplicaRun(const ReplicaRun& run) NS_EXCLUDES(mu_, zk_mu_);
  // Under the copy's lock: `leader` leads the streamlet at `leader_epoch` and this broker is an
  // in-sync follower of it.
  Status CheckFollowerWrite(const std::string& name, uint32_t streamlet, uint32_t leader,
                            uint64_t leader_epoch) NS_EXCLUDES(mu_);
  // The leader's check of a follower's ReplicaCheck or ReplicaTxnFiles: this broker leads the
  // streamlet and the sender is a replica of it. Returns the leader epoch.
  Result<uint64_t> CheckLeaderFor(const net::ReplicaCheckRequest& m) NS_EXCLUDES(mu_, zk_mu_);
  // The write of a checked ReplicaTxn into `path` of the streamlet's directory `dir`, under
  // `copy`'s lock.
  Status WriteTxnFile(const net::ReplicaTxnRequest& m, const std::string& dir,
                      const std::string& path, bool sync, FollowerCopy& copy) const;
  // What a catching-up follower copied of its leader's transaction files so far.
  struct TxnFilesCopy {
    bool started = false;                  // its own files are gone
    std::map<std::string, uint64_t> held;  // bytes of each file copied
    uint64_t bytes = 0;
  };
  // A catching-up follower replaces its copy's transaction files by the leader's, a page at a
  // time (txn_replication.cc): first while the leader takes requests (`sealed_tail` null), most
  // of them, then, with the leader sealed at `sealed_tail`, to the end.
  Status CopyTxnFiles(net::Client& leader, const std::string& name, uint32_t id,
                      storage::Streamlet& s, const storage::Position* sealed_tail,
                      TxnFilesCopy* copy) NS_EXCLUDES(mu_, zk_mu_);
  // Followers a transaction write could not reach and that could not leave the in-sync set yet,
  // per streamlet this broker leads: nothing of its transactions is acknowledged until they do.
  std::map<std::pair<std::string, uint32_t>, std::vector<uint32_t>> txn_unconfirmed_
      NS_GUARDED_BY(mu_);
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<FollowerCopy>> copies_
      NS_GUARDED_BY(mu_);
  // Followed streamlets whose copy this broker has not checked since it started: it takes no
  // chunk for them and leaves their in-sync set before it copies them again.
  std::set<std::pair<std::string, uint32_t>> rebuilding_ NS_GUARDED_BY(mu_);
  // Streamlets a replica move is bringing to this broker: the catch-up thread leaves them to it.
  std::set<std::pair<std::string, uint32_t>> moving_in_ NS_GUARDED_BY(mu_);
  // Streamlets this broker leads whose write or flush failed, with when it was last noted: handed
  // over to an in-sync follower.
  std::map<std::pair<std::string, uint32_t>, int64_t> storage_failed_ NS_GUARDED_BY(mu_);
  // Serializes Install: role changes happen one at a time, in record version order.
  Mutex install_mu_;

  std::atomic<bool> joined_{false};
  std::atomic<uint64_t> catch_up_copied_bytes_{0};
  std::atomic<uint64_t> catch_up_kept_bytes_{0};
  std::thread refresher_;
  std::thread catchup_;
  std::thread views_;
  // Syncs the segment files a follower finished writing under `async` (WriteReplicaRun), off the
  // ns-replica thread. Destroyed first: its last syncs may report to copies.
  storage::FileSyncer copy_syncer_{"ns-copy-sync", kCopySyncPending};
};

// Opaque to the broker, which keeps one per worker and hands it to StageReplica and WriteReplicas.
class ZkCluster::ReplicaWrites {
 private:
  friend class ZkCluster;
  std::vector<ReplicaRun> runs_;
};

}  // namespace nearstream::cluster
