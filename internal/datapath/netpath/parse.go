package netpath

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Outcome is what the load generator itself reports for one trial.
type Outcome struct {
	Seconds     float64 `json:"seconds"`                      // the tool's own measured time
	Bytes       float64 `json:"bytes,omitempty"`              // received (streams)
	Gbps        float64 `json:"gbps,omitempty"`               // received throughput (streams)
	Retransmits int     `json:"retransmits,omitempty"`        // TCP retransmissions (tcp-stream)
	MSS         int     `json:"mss,omitempty"`                // the connection's maximum segment size, as iperf3 read it (tcp-stream)
	LossPct     float64 `json:"loss_pct,omitempty"`           // lost datagrams (udp-stream)
	TPS         float64 `json:"transactions_per_s,omitempty"` // round trips (tcp-rr) or connections (tcp-crr) per second
	P50us       float64 `json:"p50_us,omitempty"`             // round-trip latency (tcp-rr), a whole connection's (tcp-crr)
	P99us       float64 `json:"p99_us,omitempty"`
	Failed      int64   `json:"failed,omitempty"`     // transactions that failed (tcp-crr): refused, reset, timed out
	FailedWhy   string  `json:"failed_why,omitempty"` // the first failure's error
	// SenderCPU and ReceiverCPU are iperf3's own CPU figures for its two ends (cores, from each end's
	// rusage over its run), an independent check of what tare measured.
	SenderCPU   float64 `json:"sender_cpu,omitempty"`
	ReceiverCPU float64 `json:"receiver_cpu,omitempty"`
}

// iperfReport is the part of iperf3's --json output tare reads.
type iperfReport struct {
	Start struct {
		MSS int `json:"tcp_mss_default"`
	} `json:"start"`
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
	return Outcome{Seconds: rx.Seconds, Bytes: rx.Bytes, Gbps: rx.BitsPerSecond / 1e9, Retransmits: r.End.SumSent.Retransmits, MSS: max(0, r.Start.MSS),
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

// crrReport is tare-crr client's output: one JSON object.
type crrReport struct {
	Seconds      float64 `json:"seconds"`
	Transactions int64   `json:"transactions"`
	P50us        float64 `json:"p50_us"`
	P99us        float64 `json:"p99_us"`
	Failed       int64   `json:"failed"`
	Error        string  `json:"error"`
}

// ParseCRR reads tare-crr client's JSON: transactions per second over its run, the latency percentiles of
// a whole transaction (connect to the server's close, µs), and the transactions that failed.
func ParseCRR(b []byte) (Outcome, error) {
	var r crrReport
	if err := json.Unmarshal(bytes.TrimSpace(b), &r); err != nil {
		return Outcome{}, fmt.Errorf("tare-crr output is not its JSON report: %w", err)
	}
	if r.Transactions <= 0 || r.Seconds <= 0 {
		if r.Error != "" {
			return Outcome{}, fmt.Errorf("tare-crr: no transaction completed: %s", r.Error)
		}
		return Outcome{}, errors.New("tare-crr reported no transactions")
	}
	if r.Failed < 0 || !(r.P50us > 0) || !(r.P99us >= r.P50us) {
		return Outcome{}, fmt.Errorf("tare-crr reported %d failed, p50 %v µs, p99 %v µs: not a report", r.Failed, r.P50us, r.P99us)
	}
	tps := float64(r.Transactions) / r.Seconds
	if math.IsInf(tps, 0) {
		return Outcome{}, fmt.Errorf("tare-crr reported %d transactions in %v s: not a report", r.Transactions, r.Seconds)
	}
	return Outcome{Seconds: r.Seconds, TPS: tps, P50us: r.P50us, P99us: r.P99us, Failed: r.Failed, FailedWhy: r.Error}, nil
}
