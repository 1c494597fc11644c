package record

// SchemaVersion is the version of the recording schema written by this tare. Readers accept versions up to
// and including it.
// Version 2 added node_resources; version 1 files are read without it. Version 3 added block_io (and the
// meta key block_io); files before it are read without block I/O. process_samples.statm_only came after
// version 3 without raising it (an older tare reads such a file, leaving the column out); a file without the
// column is read with every reading from smaps_rollup, as its tare took them. Version 4 added self_bpf;
// files before it are read without the run time of tare's BPF programs.
const SchemaVersion = 4

// formatName marks a SQLite file as a tare recording.
const formatName = "tare-recording"

const schemaSQL = `
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE samples (
  seq           INTEGER PRIMARY KEY,
  time_ns       INTEGER NOT NULL,
  elapsed_ns    INTEGER NOT NULL,
  took_ns       INTEGER NOT NULL,
  user_s        REAL NOT NULL, nice_s REAL NOT NULL, system_s REAL NOT NULL, idle_s REAL NOT NULL,
  iowait_s      REAL NOT NULL, irq_s REAL NOT NULL, softirq_s REAL NOT NULL, steal_s REAL NOT NULL,
  guest_s       REAL NOT NULL, guest_nice_s REAL NOT NULL,
  load1         REAL NOT NULL, load5 REAL NOT NULL, load15 REAL NOT NULL,
  procs_running INTEGER NOT NULL,
  tasks_cpu_ns  INTEGER NOT NULL,
  pressure      TEXT
);
CREATE TABLE processes (
  id            INTEGER PRIMARY KEY,
  seq           INTEGER NOT NULL,
  pid           INTEGER NOT NULL,
  start_ticks   INTEGER NOT NULL,
  ppid          INTEGER NOT NULL,
  parent_id     INTEGER NOT NULL,
  comm          TEXT NOT NULL,
  cmdline       TEXT NOT NULL,
  exe           TEXT NOT NULL,
  uid           INTEGER NOT NULL,
  kernel        INTEGER NOT NULL,
  self          INTEGER NOT NULL,
  grp           TEXT NOT NULL,
  grp_kind      TEXT NOT NULL,
  cgroup        TEXT NOT NULL,
  pod_uid       TEXT NOT NULL,
  container_id  TEXT NOT NULL,
  pod_namespace TEXT NOT NULL,
  pod_name      TEXT NOT NULL,
  container_name TEXT NOT NULL,
  first_seq     INTEGER NOT NULL,
  born_seq      INTEGER NOT NULL,
  seen          INTEGER NOT NULL,
  start_ns      INTEGER NOT NULL
);
CREATE TABLE process_samples (
  seq         INTEGER NOT NULL,
  id          INTEGER NOT NULL,
  cpu_ns      INTEGER NOT NULL,
  has_detail  INTEGER NOT NULL,
  rss         INTEGER NOT NULL, pss INTEGER NOT NULL, private INTEGER NOT NULL,
  read_bytes  INTEGER NOT NULL, write_bytes INTEGER NOT NULL,
  threads     INTEGER NOT NULL,
  statm_only  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (seq, id)
) WITHOUT ROWID;
CREATE TABLE node_resources (
  seq  INTEGER PRIMARY KEY,
  json TEXT NOT NULL
);
CREATE TABLE self_bpf (
  seq  INTEGER PRIMARY KEY,
  json TEXT NOT NULL
);
CREATE TABLE block_io (
  pid       INTEGER NOT NULL,
  major     INTEGER NOT NULL,
  minor     INTEGER NOT NULL,
  dir       INTEGER NOT NULL,
  cgroup    INTEGER NOT NULL,
  comm      TEXT NOT NULL,
  requests  INTEGER NOT NULL,
  bytes     INTEGER NOT NULL,
  device_us TEXT NOT NULL,
  queue_us  TEXT NOT NULL,
  PRIMARY KEY (pid, major, minor, dir, cgroup)
) WITHOUT ROWID;
CREATE TABLE exits (
  seq INTEGER NOT NULL,
  id  INTEGER NOT NULL,
  PRIMARY KEY (seq, id)
) WITHOUT ROWID;
`
