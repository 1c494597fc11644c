package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// DialFrom returns a dial function that connects from the network namespace nsPath (/proc/PID/ns/net or a
// bind mount of one). Each dial runs on a locked thread that enters the namespace, opens the connection and
// goes back. The thread is never left in the namespace for the runtime to reuse: a goroutine that ends
// locked on the process's main thread does not end the thread but parks it, and /proc/self/net (which
// shows the main thread's namespace) would then show the pod's sockets, not the machine's, for the rest
// of the test binary. So the thread is unlocked only once it is back; if going back fails it ends with the
// goroutine.
func DialFrom(nsPath string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			c, back, err := dialIn(ctx, nsPath, network, addr)
			if back {
				runtime.UnlockOSThread()
			}
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// dialIn dials from nsPath on the locked calling thread; back is whether the thread is in its own
// namespace again.
func dialIn(ctx context.Context, nsPath, network, addr string) (c net.Conn, back bool, err error) {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, err
	}
	defer home.Close()
	target, err := os.Open(nsPath)
	if err != nil {
		return nil, true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("entering %s: %w", nsPath, err)
	}
	var d net.Dialer
	c, err = d.DialContext(ctx, network, addr)
	return c, unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil, err
}
