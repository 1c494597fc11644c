package datapath

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Outcome is what the load generator itself reports for one trial.
type Outcome struct {
	Seconds     float64 `json:"seconds"`                      // the tool's own measured time
	Bytes       float64 `json:"bytes,omitempty"`              // received (streams)
	Gbps        float64 `json:"gbps,omitempty"`               // received throughput (streams)
	Retransmits int     `json:"retransmits,omitempty"`        // TCP retransmissions (tcp-stream)
	LossPct     float64 `json:"loss_pct,omitempty"`           // lost datagrams (udp-stream)
	TPS         float64 `json:"transactions_per_s,omitempty"` // round trips per second (tcp-rr)
	P50us       float64 `json:"p50_us,omitempty"`             // round-trip latency (tcp-rr)
	P99us       float64 `json:"p99_us,omitempty"`
	// SenderCPU and ReceiverCPU are iperf3's own CPU figures for its two ends (cores, from each end's
	// rusage over its run), an independent check of what tare measured.
	SenderCPU   float64 `json:"sender_cpu,omitempty"`
	ReceiverCPU float64 `json:"receiver_cpu,omitempty"`
}

// iperfReport is the part of iperf3's --json output tare reads.
type iperfReport struct {
	End struct {
		SumSent struct {
			Seconds     float64 `json:"seconds"`
			Bytes       float64 `json:"bytes"`
			Retransmits int     `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Seconds       float64 `json:"seconds"`
			Bytes         float64 `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			LostPercent   float64 `json:"lost_percent"`
		} `json:"sum_received"`
		CPU struct {
			HostTotal   float64 `json:"host_total"`
			RemoteTotal float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// ParseIperf reads iperf3's --json output. An iperf3 that failed says why in its "error" field.
func ParseIperf(b []byte) (Outcome, error) {
	var r iperfReport
	if err := json.Unmarshal(b, &r); err != nil {
		return Outcome{}, fmt.Errorf("iperf3 output is not its JSON report: %w", err)
	}
	if r.Error != "" {
		return Outcome{}, fmt.Errorf("iperf3: %s", r.Error)
	}
	rx := r.End.SumReceived
	if rx.Seconds <= 0 || rx.Bytes <= 0 {
		return Outcome{}, errors.New("iperf3 reported no data received")
	}
	return Outcome{Seconds: rx.Seconds, Bytes: rx.Bytes, Gbps: rx.BitsPerSecond / 1e9, Retransmits: r.End.SumSent.Retransmits,
		LossPct: rx.LostPercent, SenderCPU: r.End.CPU.HostTotal / 100, ReceiverCPU: r.End.CPU.RemoteTotal / 100}, nil
}

var (
	sockValid      = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
	sockPercentile = regexp.MustCompile(`---> percentile ([0-9.]+) =\s*([0-9.]+)`)
	sockError      = regexp.MustCompile(`ERROR: (.*)`)
)

// ParseSockperf reads sockperf ping-pong's text output (run with --full-rtt: latencies are round trips,
// in µs): the valid duration's received messages per second, and the 50th and 99th percentiles.
func ParseSockperf(b []byte) (Outcome, error) {
	var o Outcome
	var msgs float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if m := sockError.FindStringSubmatch(line); m != nil {
			return Outcome{}, fmt.Errorf("sockperf: %s", m[1])
		}
		if m := sockValid.FindStringSubmatch(line); m != nil {
			o.Seconds, _ = strconv.ParseFloat(m[1], 64)
			msgs, _ = strconv.ParseFloat(m[3], 64)
		}
		if m := sockPercentile.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			switch m[1] {
			case "50.000":
				o.P50us = v
			case "99.000":
				o.P99us = v
			}
		}
	}
	if o.Seconds <= 0 || msgs <= 0 || o.P50us <= 0 {
		return Outcome{}, errors.New("sockperf reported no round trips (no valid duration or percentiles in its output)")
	}
	o.TPS = msgs / o.Seconds
	return o, nil
}
