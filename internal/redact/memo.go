package redact

import (
	"strings"
	"sync"
)

// A long-running reader (tare agent) redacts the command line of every process that starts, and on a busy
// node most of them repeat (the kubelet's mount and iptables calls, a build's compiler): the regular
// expressions of pairs ran on every one. memo remembers the redacted form of recent short texts. It is
// bounded: texts over memoMaxLen bytes are not kept, and once memoEntries are kept the memo starts afresh,
// so it holds at most memoEntries × 2 × memoMaxLen bytes (1 MiB) whatever the node runs. Redaction is a pure
// function of its input, so a remembered answer is the answer.
const (
	memoEntries = 512
	memoMaxLen  = 1024
)

type memo struct {
	mu sync.Mutex
	m  map[string]string
}

// do returns f's answer for key, remembered when key is short enough.
func (c *memo) do(key string, f func() string) string {
	if len(key) > memoMaxLen {
		return f()
	}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = f()
	c.mu.Lock()
	if c.m == nil || len(c.m) >= memoEntries {
		c.m = make(map[string]string, memoEntries)
	}
	// Both cloned: key, and v when redaction changed nothing, may be words of a command line of up to 1 MiB,
	// which a kept substring would hold whole.
	c.m[strings.Clone(key)] = strings.Clone(v)
	c.mu.Unlock()
	return v
}

var textMemo, joinMemo memo
