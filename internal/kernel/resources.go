package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"github.com/prometheus/procfs/blockdevice"
)

// Resources are the node's memory, disk and network counters for the USE view (utilisation, saturation,
// errors). Counters are cumulative; the report takes differences.
type Resources struct {
	MemTotal     uint64     `json:"mem_total_bytes"`
	MemAvailable uint64     `json:"mem_available_bytes"`
	SwapTotal    uint64     `json:"swap_total_bytes"`
	SwapFree     uint64     `json:"swap_free_bytes"`
	VM           VMStat     `json:"vmstat"`
	Disks        []DiskStat `json:"disks,omitempty"`
	Net          []NetStat  `json:"net,omitempty"`
}

// VMStat holds the /proc/vmstat counters the USE view reads.
type VMStat struct {
	PswpIn     uint64 `json:"pswpin"`
	PswpOut    uint64 `json:"pswpout"`
	PgMajFault uint64 `json:"pgmajfault"`
	OOMKill    uint64 `json:"oom_kill"`
}

// DiskStat is one whole block device from /proc/diskstats.
type DiskStat struct {
	Name         string `json:"name"`
	ReadIOs      uint64 `json:"read_ios"`
	WriteIOs     uint64 `json:"write_ios"`
	ReadSectors  uint64 `json:"read_sectors"`
	WriteSectors uint64 `json:"write_sectors"`
	IOTicksMs    uint64 `json:"io_ticks_ms"`    // time the device had I/O in flight: utilisation
	WeightedMs   uint64 `json:"weighted_io_ms"` // I/O time × requests in flight: queue (saturation)
	FlushIOs     uint64 `json:"flush_ios"`      // flushes (fsync) completed, kernel 5.5+
	InFlight     uint64 `json:"in_flight"`      // requests in flight at the reading
	SectorBytes  uint64 `json:"sector_bytes"`   // 512 in /proc/diskstats whatever the device
	Rotational   bool   `json:"rotational,omitempty"`
}

// NetStat is one network interface from /proc/net/dev (loopback excluded), with its link speed.
type NetStat struct {
	Name      string `json:"name"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxBytes   uint64 `json:"tx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
	RxErrs    uint64 `json:"rx_errs"`
	TxErrs    uint64 `json:"tx_errs"`
	RxDrop    uint64 `json:"rx_drop"`
	TxDrop    uint64 `json:"tx_drop"`
	SpeedMbps int64  `json:"speed_mbps"` // -1 when the driver does not say (virtual links)
}

// ResourceReader reads Resources under injected /proc and /sys roots through prometheus/procfs.
type ResourceReader struct {
	proc    procfs.FS
	block   blockdevice.FS
	root    string
	sysRoot string
	// What sysfs says of devices (whole disks and whether they rotate, link speeds) hardly changes and
	// costs more to read than the counters: it is read again once a minute, or when a device appears.
	devicesRead time.Time
	whole       map[string]bool
	speeds      map[string]int64
	seen        map[string]bool // diskstats devices listed since then
}

// devicesEvery is how often the devices' sysfs facts are read again.
const devicesEvery = time.Minute

// NewResourceReader opens the roots; it fails only when /proc itself is unusable.
func NewResourceReader(procRoot, sysRoot string) (*ResourceReader, error) {
	p, err := procfs.NewFS(procRoot)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", procRoot, err)
	}
	b, err := blockdevice.NewFS(procRoot, sysRoot)
	if err != nil {
		return nil, fmt.Errorf("opening %s and %s: %w", procRoot, sysRoot, err)
	}
	return &ResourceReader{proc: p, block: b, root: procRoot, sysRoot: sysRoot}, nil
}

// Read takes one reading. Parts that cannot be read are left empty and named in the error, which is
// informational: the rest of the reading is good.
func (r *ResourceReader) Read() (*Resources, error) {
	res := &Resources{}
	var missing []string
	if m, err := guarded(r.proc.Meminfo); err == nil {
		res.MemTotal, res.MemAvailable = deref(m.MemTotalBytes), deref(m.MemAvailableBytes)
		res.SwapTotal, res.SwapFree = deref(m.SwapTotalBytes), deref(m.SwapFreeBytes)
	} else {
		missing = append(missing, "meminfo: "+err.Error())
	}
	if b, err := os.ReadFile(filepath.Join(r.root, "vmstat")); err == nil {
		res.VM = parseVMStat(b)
	} else {
		missing = append(missing, "vmstat: "+err.Error())
	}
	if time.Since(r.devicesRead) > devicesEvery {
		r.readDevices()
	}
	if ds, err := guarded(r.block.ProcDiskstats); err == nil {
		if r.newDevice(ds) {
			r.readDevices()
			r.newDevice(ds)
		}
		res.Disks = wholeDisks(ds, r.whole)
	} else {
		missing = append(missing, "diskstats: "+err.Error())
	}
	if nd, err := guarded(r.proc.NetDev); err == nil {
		for name, l := range nd {
			if name == "lo" {
				continue
			}
			res.Net = append(res.Net, NetStat{Name: name, RxBytes: l.RxBytes, TxBytes: l.TxBytes, RxPackets: l.RxPackets,
				TxPackets: l.TxPackets, RxErrs: l.RxErrors, TxErrs: l.TxErrors, RxDrop: l.RxDropped, TxDrop: l.TxDropped,
				SpeedMbps: r.speed(name)})
		}
		sortNet(res.Net)
	} else {
		missing = append(missing, "net/dev: "+err.Error())
	}
	if len(missing) > 0 {
		return res, fmt.Errorf("node resources: %s", strings.Join(missing, "; "))
	}
	return res, nil
}

// guarded calls one of prometheus/procfs's readers and turns a panic of its parser into an error: procfs
// v0.23 indexes the fields of a /proc/net/dev line without counting them, so a truncated line ("eth0:")
// panics. A malformed file is reported as unreadable; it must not take the sampler down.
func guarded[T any](read func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("malformed file: %v", p)
		}
	}()
	return read()
}

// readDevices reads the devices' sysfs facts now.
func (r *ResourceReader) readDevices() {
	r.devicesRead = time.Now()
	r.whole = r.sysBlock()
	r.speeds = map[string]int64{}
	r.seen = nil
}

// newDevice reports a diskstats device not seen since sysfs was last read (a disk plugged in meanwhile);
// the devices it lists are remembered.
func (r *ResourceReader) newDevice(ds []blockdevice.Diskstats) bool {
	if r.seen == nil {
		r.seen = make(map[string]bool, len(ds))
		for _, d := range ds {
			r.seen[d.DeviceName] = true
		}
		return false
	}
	return slices.ContainsFunc(ds, func(d blockdevice.Diskstats) bool { return !r.seen[d.DeviceName] })
}

// sysBlock lists whole block devices (sysfs /sys/block) with whether they rotate; nil when unreadable.
func (r *ResourceReader) sysBlock() map[string]bool {
	names, err := ReadDirNames(filepath.Join(r.sysRoot, "block"))
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(r.sysRoot, "block", n, "queue", "rotational"))
		out[n] = strings.TrimSpace(string(b)) == "1"
	}
	return out
}

// speed returns an interface's link speed in Mb/s, -1 when the driver does not say; read once per
// devicesEvery.
func (r *ResourceReader) speed(iface string) int64 {
	if v, ok := r.speeds[iface]; ok {
		return v
	}
	v := int64(-1)
	if b, err := os.ReadFile(filepath.Join(r.sysRoot, "class", "net", iface, "speed")); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			v = n
		}
	}
	if r.speeds != nil {
		r.speeds[iface] = v
	}
	return v
}

// wholeDisks keeps whole devices (those in /sys/block when known, so partitions are not counted twice)
// that are not loop or ram devices or idle since boot.
func wholeDisks(ds []blockdevice.Diskstats, whole map[string]bool) []DiskStat {
	var out []DiskStat
	for _, d := range ds {
		rot, ok := whole[d.DeviceName]
		if whole != nil && !ok {
			continue
		}
		if strings.HasPrefix(d.DeviceName, "loop") || strings.HasPrefix(d.DeviceName, "ram") {
			continue
		}
		if d.ReadIOs+d.WriteIOs == 0 {
			continue
		}
		out = append(out, DiskStat{Name: d.DeviceName, ReadIOs: d.ReadIOs, WriteIOs: d.WriteIOs, ReadSectors: d.ReadSectors,
			WriteSectors: d.WriteSectors, IOTicksMs: d.IOsTotalTicks, WeightedMs: d.WeightedIOTicks, FlushIOs: d.FlushRequestsCompleted,
			InFlight: d.IOsInProgress, SectorBytes: 512, Rotational: rot})
	}
	return out
}

// parseVMStat reads the counters the USE view needs from /proc/vmstat ("name value" lines).
func parseVMStat(b []byte) VMStat {
	var v VMStat
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "pswpin":
			v.PswpIn = n
		case "pswpout":
			v.PswpOut = n
		case "pgmajfault":
			v.PgMajFault = n
		case "oom_kill":
			v.OOMKill = n
		}
	}
	return v
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

func sortNet(ns []NetStat) { sort.Slice(ns, func(i, j int) bool { return ns[i].Name < ns[j].Name }) }
