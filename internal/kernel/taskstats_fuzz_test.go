package kernel

import (
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets of the netlink decoders: taskstats replies and exit notifications, and proc connector
// events, seeded with datagrams captured from this kernel (see TestCaptureNetlink and
// TestCaptureProcConnector). They decode a datagram the way the sampler does.

func FuzzParseTaskstatsDatagram(f *testing.F) {
	seedFiles(f, "taskstats_*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseNetlinkMessages(b, func(typ uint16, p []byte) error {
			if len(p) > len(b)-nlmsgHdrLen {
				t.Fatalf("payload of %d bytes from a %d-byte datagram", len(p), len(b))
			}
			if typ == nlmsgError {
				_ = netlinkErrno(p)
				return nil
			}
			r, err := parseTaskstatsPayload(p)
			if err != nil {
				return err
			}
			if rec, ok := exitFromReply(r); ok && r.PIDStats == nil {
				t.Fatalf("exit %+v from a reply without per-task statistics", rec)
			}
			return nil
		})
	})
}

func FuzzParseTaskStats(f *testing.F) {
	// The struct taskstats inside each captured datagram.
	for _, name := range []string{"taskstats_tgid_reply.bin", "taskstats_exit_notification.bin"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		err = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
			return walkAttrs(p[genlHdrLen:], func(_ uint16, val []byte) error {
				return walkAttrs(val, func(inner uint16, v []byte) error {
					if inner == tsTypeStats {
						f.Add(v)
					}
					return nil
				})
			})
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseTaskStats(b)
		if err == nil && len(s.Comm) > 32 {
			t.Fatalf("comm of %d bytes; the kernel's is at most 32", len(s.Comm))
		}
	})
}

func FuzzParseProcEventDatagram(f *testing.F) {
	seedFiles(f, "seeds/proc_connector_*.bin")
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = parseNetlinkMessages(b, func(_ uint16, p []byte) error {
			if ev, ok := parseProcEvent(p); ok && ev.What != procEventFork && ev.What != procEventExec {
				t.Fatalf("event %+v is neither a fork nor an exec", ev)
			}
			return nil
		})
	})
}
