package datapath

import (
	"fmt"
	"strconv"
	"time"
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
)

// MaxRRSize is the largest message sockperf sends (its largest UDP payload, also for TCP).
const MaxRRSize = 65507

// Tools are the programs a run needs on the machine and in the image.
var Tools = []string{"iperf3", "sockperf"}

// serverCommands are the two servers every endpoint runs: iperf3 for streams, sockperf for ping-pong.
func serverCommands(iperfPort, sockperfPort int) (iperf, sockperf []string) {
	return []string{"iperf3", "--server", "--port", strconv.Itoa(iperfPort)},
		[]string{"sockperf", "server", "--tcp", "--port", strconv.Itoa(sockperfPort)}
}

// clientCommand is the client of one trial: addr and ports are the server's, d the trial's length (whole
// seconds), parallel the streams of a stream mode.
func clientCommand(l Lane, addr string, iperfPort, sockperfPort int, d time.Duration, parallel int) []string {
	secs := strconv.Itoa(int(d / time.Second))
	switch l.Mode {
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
// a UDP datagram larger than UDP carries.
func CheckLanes(lanes []Lane) error {
	for _, l := range lanes {
		if (l.Mode == TCPRR || l.Mode == UDPStream) && l.Size > MaxRRSize {
			return fmt.Errorf("%s with %s messages: sockperf and UDP carry at most %d bytes; use smaller --sizes (or measure this mode in a run of its own)", l.Mode, FormatSize(l.Size), MaxRRSize)
		}
	}
	return nil
}
