package netpath

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tare-dev/tare/internal/datapath"
)

// Ports the servers listen on: in pods, on the machine (the host path), and in the hostNetwork pod (which
// shares the machine's ports, so it needs others).
const (
	podIperfPort        = 5201
	podSockperfPort     = 11111
	hostIperfPort       = 15201
	hostSockperfPort    = 11211
	hostNetIperfPort    = 15301
	hostNetSockperfPort = 11311
	podCRRPort          = 12865 // netperf's
	hostCRRPort         = 12866
	hostNetCRRPort      = 12867
)

// MaxCRRSize is the largest request and response tare-crr sends: its maxSize, which it cannot import (it
// is built alone from its one file); lab's TestCRRMaxSize holds the two equal.
const MaxCRRSize = 64 << 20

// CRR names tare-crr, the connect/request/response program of tcp-crr: the path of its build on the
// machine (the host path runs it there) and its name on the PATH of the pods' image.
type CRR struct {
	Host string
	Pod  string
}

// MaxRRSize is the largest message sockperf sends (its largest UDP payload, also for TCP).
const MaxRRSize = 65507

// Tools are the programs a run needs on the machine and in the image (with tare-crr for tcp-crr).
var Tools = []string{"iperf3", "sockperf"}

// crrServer is tare-crr's server command: prog is where it is, bind "" for every address.
func crrServer(prog string, port int, bind string) []string {
	argv := []string{prog, "server", "--port", strconv.Itoa(port)}
	if bind != "" {
		argv = append(argv, "--bind", bind)
	}
	return argv
}

// serverCommands are the two servers every endpoint runs: iperf3 for streams, sockperf for ping-pong.
func serverCommands(iperfPort, sockperfPort int) (iperf, sockperf []string) {
	return []string{"iperf3", "--server", "--port", strconv.Itoa(iperfPort)},
		[]string{"sockperf", "server", "--tcp", "--port", strconv.Itoa(sockperfPort)}
}

// clientCommand is the client of one trial: ep says where the server is (and crr where tare-crr is), d
// is the trial's length (whole seconds), parallel the streams of a stream mode or the transactions under
// way at once of tcp-crr.
func clientCommand(l Lane, ep endpoint, crr string, d time.Duration, parallel int) []string {
	secs := strconv.Itoa(int(d / time.Second))
	addr, iperfPort, sockperfPort := ep.addr, ep.iperfPort, ep.sockperfPort
	switch l.Mode {
	case TCPCRR:
		return []string{crr, "client", "--addr", addr, "--port", strconv.Itoa(ep.crrPort), "--time", secs,
			"--size", strconv.Itoa(l.Size), "--parallel", strconv.Itoa(parallel)}
	case StorageRead, StorageWrite:
		req, resp := l.Mode.crrSizes(l.Size)
		return []string{crr, "client", "--addr", addr, "--port", strconv.Itoa(ep.crrPort), "--time", secs, "--keep",
			"--request", strconv.Itoa(req), "--response", strconv.Itoa(resp), "--parallel", strconv.Itoa(parallel)}
	case TCPRR:
		return []string{"sockperf", "ping-pong", "--tcp", "--ip", addr, "--port", strconv.Itoa(sockperfPort),
			"--time", secs, "--msg-size", strconv.Itoa(l.Size), "--full-rtt"}
	case UDPStream:
		return []string{"iperf3", "--client", addr, "--port", strconv.Itoa(iperfPort), "--udp", "--bitrate", "0",
			"--time", secs, "--length", strconv.Itoa(l.Size), "--parallel", strconv.Itoa(parallel), "--json", "--connect-timeout", "5000"}
	default:
		return []string{"iperf3", "--client", addr, "--port", strconv.Itoa(iperfPort),
			"--time", secs, "--length", strconv.Itoa(l.Size), "--parallel", strconv.Itoa(parallel), "--json", "--connect-timeout", "5000"}
	}
}

// CheckLanes says what no trial of these lanes could run: a ping-pong message larger than sockperf sends,
// a UDP datagram larger than UDP carries, a tcp-crr request larger than tare-crr sends.
func CheckLanes(lanes []Lane) error {
	for _, l := range lanes {
		if (l.Mode == TCPRR || l.Mode == UDPStream) && l.Size > MaxRRSize {
			return fmt.Errorf("%s with %s messages: sockperf and UDP carry at most %d bytes; use smaller --sizes (or measure this mode in a run of its own)", l.Mode, datapath.FormatSize(l.Size), MaxRRSize)
		}
		if l.Mode.UsesCRR() && l.Size > MaxCRRSize {
			return fmt.Errorf("%s with %s messages: tare-crr sends at most %s; use smaller --sizes", l.Mode, datapath.FormatSize(l.Size), datapath.FormatSize(MaxCRRSize))
		}
	}
	return nil
}
