# The one wire schema of Tessera. Every message between coordinator, servers and clients is an
# Envelope. Bump `protocolVersion` on any incompatible change; receivers reject other versions.
@0xa526cb904c54c987;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("tessera::proto");

const protocolVersion :UInt32 = 4;

enum ValueType {
  float32 @0;
  float64 @1;
  int32 @2;
  int64 @3;
}

enum Role {
  server @0;
  worker @1;
  launcher @2;              # `tessera run` itself (Heartbeat only)
}

enum ErrorCode {
  invalidArgument @0;
  notFound @1;
  outOfRange @2;
  failedPrecondition @3;
  versionMismatch @4;
  malformed @5;
  unauthenticated @6;
  dataLoss @7;
  # The request waits for a worker that left the program (returned from main): it can never be
  # answered. Status code Aborted.
  peerLeft @8;
}

# The cells of one row: dense (columns empty, one value per column) or sparse (columns[i] holds
# values[i]). Exactly one list of the table's value type is set.
struct Values {
  columns @0 :List(UInt32);
  union {
    f32 @1 :List(Float32);
    f64 @2 :List(Float64);
    i32 @3 :List(Int32);
    i64 @4 :List(Int64);
  }
}

struct Row {
  table @0 :UInt32;
  row @1 :UInt64;
  values @2 :Values;
}

struct TableSpec {
  id @0 :UInt32;
  name @1 :Text;
  valueType @2 :ValueType;
  numRows @3 :UInt64;       # rows are 0 .. numRows-1
  width @4 :UInt32;         # columns per row (dense width, or column bound for sparse rows)
  sparse @5 :Bool;
  staleness @6 :UInt32;     # SSP bound s; 0 = bulk-synchronous
}

# --- membership (coordinator) ---
struct Register {
  role @0 :Role;
  rank @1 :UInt32;
  endpoint @2 :Text;        # servers: where clients reach them
  secret @3 :Text;
  # The process heartbeats (a LivenessAgent): the coordinator watches it from this registration
  # on, so that a process stopped before its agent's first heartbeat arrives is reported too.
  heartbeats @4 :Bool;
  pid @5 :UInt32;           # with heartbeats: for the report naming the process
  host @6 :Text;
}

struct Membership {
  servers @0 :List(Text);   # endpoint of server i at index i
  numWorkers @1 :UInt32;
}

struct Barrier {
  id @0 :UInt64;            # the n-th barrier of this job
}

struct Leave {
  rank @0 :UInt32;
}

# --- liveness (docs/faults.md, "When something fails") ---
# Every server and worker, and `tessera run` itself, sends one to the coordinator every tenth of
# the heartbeat timeout, from a thread of its own (liveness is about answering, not progress).
# The coordinator answers each with a HeartbeatAck.
struct Heartbeat {
  role @0 :Role;
  rank @1 :UInt32;
  pid @2 :UInt32;           # for the report that names a process that stopped answering
  host @3 :Text;
  secret @4 :Text;
  leaving @5 :Bool;         # the process is done with the job: stop watching it
}

struct HeartbeatAck {
  supervised @0 :Bool;      # a launcher watches the job and stops every process on a failure
}

# The job failed (a process stopped answering). Sent by the coordinator to the launcher when one
# watches the job, else to every process, which then exits.
struct JobFailed {
  reason @0 :Text;          # names the process: "worker 1 (pid 4242 on node2) stopped answering ..."
  exitCode @1 :Int32;       # the exit code the job should end with
}

# --- data (server shards) ---
struct GetRequest {
  table @0 :UInt32;
  rows @1 :List(UInt64);
  minClock @2 :Int64;       # reply only once the shard's clock (min over workers) reaches this
  unsubscribe @3 :List(UInt64);  # rows of the table the client evicted: see Unsubscribe; applied
                                 # on arrival, before `rows` are answered
  subscribe @4 :Bool = true;     # false: an uncached read. The rows are answered as they are,
                                 # the client is not subscribed to them (no pushes follow), and a
                                 # row nobody has written gets no entry on the server.
  soleThread @5 :Bool;      # the reader's process has a single thread: while this read waits,
                            # it reaches no barrier (see WaitingAtBarrier)
}

# A worker is about to wait at barrier `id` (sent to every server before the Barrier): its clock
# will not advance until every worker gets there. A read from a single-threaded worker that
# waits for that clock can then never be answered (that worker cannot get there), so the server
# fails it at once, naming both, instead of letting the job hang until the read's time-out. The
# worker's next message (a clock, an update, a read, its Leave) says it is past the barrier.
struct WaitingAtBarrier {
  id @0 :UInt64;
}

# Rows a client dropped from its cache (it has a capacity): the server stops pushing them to it
# until it reads them again. Sent (alone, or in a GetRequest) before any later GetRequest of the
# same rows.
struct Unsubscribe {
  table @0 :UInt32;
  rows @1 :List(UInt64);
}

# Whole rows of one dense table, packed: the cells of rows[i] are values[i * width, (i + 1) *
# width) of the list of the table's value type (columns empty). One list for the whole batch
# instead of two structs and a list per row: a reader checks the block once, then copies rows.
struct DenseRows {
  table @0 :UInt32;
  rows @1 :List(UInt64);
  values @2 :Values;
}

# Rows sent to a client, as a reply to a GetRequest or pushed at a clock advance. Servers send
# rows of sparse tables in `rows` and rows of dense tables in `dense` (a reader accepts either).
struct RowBatch {
  rows @0 :List(Row);
  clock @1 :Int64;          # the shard's clock: every update from clocks < clock is included
  appliedSeq @2 :UInt64;    # the highest update batch of the receiving client applied here
  dense @3 :List(DenseRows);
}

struct UpdateBatch {
  seq @0 :UInt64;           # per (client, server): 1, 2, 3, ... ; duplicates are ignored
  rows @1 :List(Row);       # additive deltas (clients send rows of sparse tables here)
  clock @2 :Int64 = -1;     # if >= 0, a ClockTick that follows the deltas (saves a message)
  ackWanted @3 :Bool;       # answer with an UpdateAck once applied (flow control)
  dense @4 :List(DenseRows);  # additive whole-row deltas of dense tables, packed per table
}

# The client's update batches up to `appliedSeq` are applied: it may send more (it keeps at most
# a window of unacknowledged batches per server, so a fast writer cannot queue without bound).
struct UpdateAck {
  appliedSeq @0 :UInt64;
}

struct ClockTick {
  clock @0 :Int64;          # the worker has completed clocks < clock
}

struct TableAck {
  id @0 :UInt32;
}

struct Error {
  code @0 :ErrorCode;
  message @1 :Text;
}

# --- worker-to-worker (the runtime's peer mesh) ---
# A worker announces where its peers reach it; the coordinator answers with every worker's
# endpoints once all have announced.
struct AnnouncePeer {
  rank @0 :UInt32;
  endpoint @1 :Text;       # reachable from every host
  secret @2 :Text;
  localEndpoint @3 :Text;  # ipc:// for peers on the same host (empty: none)
  host @4 :Text;           # where localEndpoint is valid (empty: nowhere)
}

struct PeerList {
  endpoints @0 :List(Text);       # endpoint of worker i at index i
  localEndpoints @1 :List(Text);  # its localEndpoint, at index i
  hosts @2 :List(Text);           # its host, at index i
}

# Changed elements of one array: `runs` holds (begin, count) pairs of element positions (the
# array's storage order), `values` the elements of those runs back to back in the array's native
# element layout (the workers of a job share one architecture). `additive`: the values are
# deltas to add rather than new values.
struct ArrayPatch {
  array @0 :Int64;           # creation number of the array (identical on every worker)
  layoutVersion @1 :UInt64;  # the receiver's array must be at the same layout
  additive @2 :Bool;
  elementBytes @3 :UInt32;
  runs @4 :List(UInt64);
  values @5 :Data;
}

# One message of the runtime between the workers of a job. `tag` says which collective step it
# belongs to (loop call and step), so messages that arrive early wait for their turn.
struct PeerMessage {
  tag @0 :UInt64;
  step @1 :Int64;
  patches @2 :List(ArrayPatch);
  payload @3 :Data;          # opaque bytes of an all-gather (loading, reductions)
  # Unused (kept for their ordinals): a round handed over in shared memory is posted in the
  # slots' header instead of announced by a message (runtime/src/distributed/round_slots.h).
  unusedSlotBytes @4 :UInt64;
  unusedSlotRound @5 :UInt64;
  # In the first message on a connection (its hello): the sender mapped this worker's round slots.
  mapsSlots @6 :Bool;
}

# --- data loading (runtime/src/input/data.cc) ---
# Under a distributed load every worker parses its byte range of the input file into one
# LoadedShare; the shares are all-gathered (PeerMessage.payload) and concatenated in rank order,
# which is file order, so that every worker builds the same arrays.
struct RatingRecords {
  users @0 :List(Int64);      # external ids as in the file, file order
  items @1 :List(Int64);
  values @2 :List(Float64);   # ratings as parsed (converted to the array type after the merge)
}

struct DocwordRecords {
  docs @0 :List(Int64);       # 1-based ids as in the file (validated against the header), file order
  words @1 :List(Int64);
  counts @2 :List(Int32);     # in [1, 2^31)
}

struct LoadedShare {
  error @0 :Text;             # empty: the share parsed; else its first error ("path:byte N: ...")
  errorCode @1 :ErrorCode;
  errorInTest @2 :Bool;       # the error is in load_triples' held-out file (the training share parsed)
  union {
    triples :group {
      train @3 :RatingRecords;
      test @4 :RatingRecords; # the share of load_triples' test_path file
    }
    docword @5 :DocwordRecords;  # entry lines only; every worker reads the header itself
  }
}

# --- partitioned sparse arrays (runtime/src/exchange/record_exchange.cc) ---
# Stored elements of sparse arrays moving between workers (PeerMessage.payload of an all-to-all
# or all-gather): one SparseRecords per array, in an order both sides know.
struct SparseRecords {
  keys @0 :List(Int64);       # key components, rank per element
  values @1 :Data;            # raw values, element size per element
  orderHigh @2 :List(UInt64); # the element's place in its array's serial order (high, low)
  orderLow @3 :List(UInt64);
}

struct RecordShipment {
  arrays @0 :List(SparseRecords);
  error @1 :Text;             # a loader's error that every worker must return; empty when none
  errorCode @2 :ErrorCode;
}

# DistArray::assign_permuted between partitioned arrays (runtime/src/permute/assign_permuted.cc):
# one round of one worker's elements for another when a plan is made, their permuted keys (the
# receiver finds where each belongs in its share). Every later exchange carries the values alone,
# in that same order, as the raw payload of a PeerMessage (PeerMesh::ExchangeRounds).
struct PermutedValues {
  keys @0 :List(Int64);       # key components, rank per element
}

# One worker's count of stored elements per key value along one dimension, all-gathered and
# summed to cut a partitioned array into equal-count key ranges.
struct KeyCounts {
  counts @0 :List(UInt64);
}

# A partitioned load_triples: what each worker all-gathers after parsing its byte ranges, instead
# of its records -- its first error, or its distinct ids and record counts.
struct LoadedIds {
  error @0 :Text;
  errorCode @1 :ErrorCode;
  errorInTest @2 :Bool;
  users @3 :List(Int64);      # distinct external ids, increasing
  items @4 :List(Int64);
  trainCount @5 :UInt64;
  testCount @6 :UInt64;
}

# Checkpoints of the servers' tables (docs/faults.md, "Checkpoints, resume and restarts").
# The checkpoint's writer (worker 0's runtime) asks every server to write its own shard of the
# named tables into a checkpoint directory, and a resumed job's to load them back. They come
# from a connection of their own, not from a registered client, so each carries the secret's
# proof; the directory is a name inside the server's own TESSERA_CHECKPOINT_DIR.
struct SaveTables {
  secret @0 :Text;
  checkpoint @1 :Text;      # "ckpt-" and 12 digits
  tables @2 :List(Text);    # names of the tables to write (the others are not part of it)
}

# A server's file of a checkpoint: the answer to SaveTables, and what RestoreTables lists.
struct TablesFile {
  server @0 :UInt32;
  name @1 :Text;            # inside the checkpoint's directory
  bytes @2 :UInt64;
  crc32 @3 :UInt32;         # zlib crc32 of the whole file
}

struct RestoreTables {
  secret @0 :Text;
  checkpoint @1 :Text;
  files @2 :List(TablesFile);  # every server's file (the rows are re-sharded on creation)
}

# What a server's file holds (a message written to disk, not sent): its shard of the tables.
struct SavedTable {
  spec @0 :TableSpec;
  rows @1 :List(Row);
}
struct SavedTables {
  server @0 :UInt32;
  numServers @1 :UInt32;
  tables @2 :List(SavedTable);
}

# The membership, for a process that is not a server or worker of the job (the checkpoint
# writer's connection to the servers).
struct MembershipQuery {
  secret @0 :Text;
}

struct Envelope {
  version @0 :UInt32;
  sender @1 :UInt32;        # worker rank, or server rank for server-originated messages
  requestId @2 :UInt64;     # echoed in the reply; 0 = no reply expected
  body :union {
    register @3 :Register;
    membership @4 :Membership;
    barrier @5 :Barrier;
    barrierRelease @6 :Barrier;
    leave @7 :Leave;
    createTable @8 :TableSpec;
    tableAck @9 :TableAck;
    get @10 :GetRequest;
    rows @11 :RowBatch;     # reply to get (requestId set) or push (requestId 0)
    update @12 :UpdateBatch;
    clock @13 :ClockTick;
    error @14 :Error;
    announcePeer @15 :AnnouncePeer;
    peerList @16 :PeerList;
    peer @17 :PeerMessage;
    unsubscribe @18 :Unsubscribe;
    updateAck @19 :UpdateAck;
    heartbeat @20 :Heartbeat;
    heartbeatAck @21 :HeartbeatAck;
    jobFailed @22 :JobFailed;
    saveTables @23 :SaveTables;
    tablesFile @24 :TablesFile;      # reply to saveTables
    restoreTables @25 :RestoreTables;  # answered with tableAck (id: tables loaded)
    membershipQuery @26 :MembershipQuery;  # answered with membership
    waitingAtBarrier @27 :WaitingAtBarrier;
  }
}
