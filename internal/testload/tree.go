package testload

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// nest is the phantom-CPU scenario of a process tree that ended before the window: the helper (P) starts a
// child C, C starts a grandchild G that burns BURN of CPU and ends, C reaps it (C's cutime now holds BURN),
// and P prints "ready". When a line arrives on P's stdin, C exits and P reaps it: P's cutime then jumps by
// BURN although that CPU was spent before. P prints "reaped" and idles until stdin closes. Args: BURN.
func nest(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("nest needs BURN")
	}
	self, _ := os.Executable()
	c := exec.Command(self, args[0])
	c.Env = append(os.Environ(), EnvMode+"=nest-mid")
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		return fmt.Errorf("nest: starting the child: %w", err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		return fmt.Errorf("nest: the child did not get ready: %w", err)
	}
	fmt.Println("ready")
	stdin := bufio.NewReader(os.Stdin)
	if _, err := stdin.ReadString('\n'); err != nil {
		_ = c.Process.Kill()
		_ = c.Wait()
		return nil
	}
	_ = in.Close()
	if err := c.Wait(); err != nil {
		return fmt.Errorf("nest: child: %w", err)
	}
	fmt.Println("reaped")
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

// nestMid is C of the nest scenario: it runs a grandchild that burns BURN, reaps it, prints "ready" and
// exits when its stdin closes. Args: BURN.
func nestMid(args []string) error {
	self, _ := os.Executable()
	g := exec.Command(self, "storm-child", "--burn", args[0])
	g.Env = append(os.Environ(), EnvMode+"=child")
	g.Stderr = os.Stderr
	if err := g.Run(); err != nil {
		return fmt.Errorf("nest: grandchild: %w", err)
	}
	fmt.Println("ready")
	waitStdin()
	return nil
}
