package testload

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnvMode selects the helper mode when a test binary starts.
const EnvMode = "TARE_TESTLOAD"

// Main runs the helper mode named in $TARE_TESTLOAD and exits; it returns at once when the variable is
// unset, so TestMain can call it first.
func Main() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	args := os.Args[1:]
	var err error
	switch mode {
	case "burn":
		err = burn(args)
	case "storm":
		err = storm(args)
	case "child":
		err = child(args)
	case "churn":
		err = churn(args)
	case "nest":
		err = nest(args)
	case "nest-mid":
		err = nestMid(args)
	case "idle":
		waitStdin()
	case "grow":
		err = grow()
	default:
		err = fmt.Errorf("unknown %s mode %q", EnvMode, mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command returns a command that runs the current test binary in mode with args. The helper lives until its
// stdin closes (or the command is killed).
func Command(mode string, args ...string) *exec.Cmd {
	self, _ := os.Executable()
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), EnvMode+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

func waitStdin() {
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func processCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// burn uses exactly MILLICORES of CPU from now on (a fraction too: 0.7), regulated against its own CPU
// clock (every 5 ms, or as rarely as a small load allows), on enough threads to catch up after being
// preempted. Args: MILLICORES.
func burn(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("burn needs MILLICORES")
	}
	mc, err := strconv.ParseFloat(args[0], 64)
	if err != nil || !(mc > 0) || math.IsInf(mc, 0) {
		return fmt.Errorf("burn: bad millicores %q", args[0])
	}
	workers := int(mc)/700 + 1
	start, cpu0 := time.Now(), processCPU()
	var stop sync.WaitGroup
	for range workers {
		stop.Add(1)
		go func() {
			defer stop.Done()
			runtime.LockOSThread()
			for {
				target := time.Duration(float64(time.Since(start)) * mc / 1000)
				ahead := processCPU() - cpu0 - target
				if ahead < 0 {
					spin(200 * time.Microsecond)
					continue
				}
				// Sleep until the target catches up (at least 5 ms, at most 1 s): a small load wakes
				// rarely, so that its wake-ups, which count in its CPU, stay well below it.
				time.Sleep(min(max(time.Duration(float64(ahead)*1000/mc), 5*time.Millisecond), time.Second))
			}
		}()
	}
	fmt.Println("ready")
	waitStdin()
	return nil
}

func spin(d time.Duration) {
	end := processCPU() + d
	x := 1.0
	for processCPU() < end {
		for i := 0; i < 1000; i++ {
			x = x*1.0000001 + 1e-9
		}
	}
	_ = x
}

// StormResult is what the storm helper prints when its storm is over: the CPU of all the children it
// reaped, from getrusage(RUSAGE_CHILDREN), and their number.
type StormResult struct {
	ChildrenCPUNs int64 `json:"children_cpu_ns"`
	Children      int   `json:"children"`
}

// storm waits DELAY, then spawns RATE children per second for DURATION, each burning BURN of CPU, reaps
// them, prints a StormResult and idles until stdin closes. Args: DELAY RATE DURATION BURN.
func storm(args []string) error {
	if len(args) < 4 {
		return fmt.Errorf("storm needs DELAY RATE DURATION BURN")
	}
	delay, err1 := time.ParseDuration(args[0])
	rate, err2 := strconv.Atoi(args[1])
	dur, err3 := time.ParseDuration(args[2])
	if err1 != nil || err2 != nil || err3 != nil || rate <= 0 {
		return fmt.Errorf("storm: bad arguments %q", args)
	}
	time.Sleep(delay)
	self, _ := os.Executable()
	env := append(os.Environ(), EnvMode+"=child")
	n := 0
	tick := time.NewTicker(time.Second / time.Duration(rate))
	end := time.Now().Add(dur)
	for time.Now().Before(end) {
		<-tick.C
		cmd := exec.Command(self, "storm-child", "--burn", args[3])
		cmd.Env = env
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("storm child: %w", err)
		}
		n++
	}
	tick.Stop()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return err
	}
	ns := ru.Utime.Nano() + ru.Stime.Nano()
	out, _ := json.Marshal(StormResult{ChildrenCPUNs: ns, Children: n})
	fmt.Println(string(out))
	waitStdin()
	return nil
}

// child burns BURN of CPU and exits. Args: storm-child --burn BURN.
func child(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("child needs storm-child --burn BURN")
	}
	d, err := time.ParseDuration(args[2])
	if err != nil {
		return fmt.Errorf("child: %w", err)
	}
	spin(d)
	return nil
}

// churn uses exactly MILLICORES of CPU on short-lived threads: every 20 ms a new OS thread starts, burns
// until the process is back on target, and exits (a goroutine that returns while locked to its thread
// takes the thread with it). Args: MILLICORES.
func churn(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("churn needs MILLICORES")
	}
	mc, err := strconv.Atoi(args[0])
	if err != nil || mc <= 0 || mc > 900 {
		return fmt.Errorf("churn: bad millicores %q (1-900)", args[0])
	}
	start, cpu0 := time.Now(), processCPU()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		for range tick.C {
			go func() {
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				for {
					target := time.Duration(float64(time.Since(start)) * float64(mc) / 1000)
					if processCPU()-cpu0 >= target {
						return
					}
					spin(200 * time.Microsecond)
				}
			}()
		}
	}()
	fmt.Println("ready")
	waitStdin()
	return nil
}

// grow maps and touches fresh private memory as told: each line on stdin is a size in KiB; the helper
// prints "ok" once that much more of its memory is resident. It ends when stdin closes.
func grow() error {
	in := bufio.NewScanner(os.Stdin)
	var kept [][]byte // referenced to the end, so nothing is unmapped
	for in.Scan() {
		kib, err := strconv.Atoi(strings.TrimSpace(in.Text()))
		if err != nil || kib <= 0 {
			return fmt.Errorf("grow: want a size in KiB, got %q", in.Text())
		}
		b, err := syscall.Mmap(-1, 0, kib<<10, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return fmt.Errorf("grow: %w", err)
		}
		for i := 0; i < len(b); i += os.Getpagesize() {
			b[i] = 1
		}
		kept = append(kept, b)
		fmt.Println("ok")
	}
	_ = kept
	return in.Err()
}
