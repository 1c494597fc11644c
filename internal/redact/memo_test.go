package redact

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestMemoSameAnswer: a remembered answer is the one redaction gives, for texts and argvs with and without
// secrets, asked many times from several goroutines.
func TestMemoSameAnswer(t *testing.T) {
	texts := []string{
		"kubelet --token=abc123 --v=2",
		"curl -H Authorization: Bearer abc.def",
		"mysql -uroot -psecret db",
		"/bin/true",
		"postgres://u:pw@host/db?password=x&sslmode=disable",
	}
	argvs := [][]string{{"kubelet", "--token", "abc"}, {"sshpass", "-p", "pw", "ssh", "h"}, {"/bin/true"}}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				for _, s := range texts {
					if got, want := Text(s), text(s); got != want {
						t.Errorf("goroutine %d: Text(%q) = %q, want %q", g, s, got, want)
					}
				}
				for _, a := range argvs {
					if got, want := Join(a), strings.Join(Args(a), " "); got != want {
						t.Errorf("goroutine %d: Join(%q) = %q, want %q", g, a, got, want)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestMemoBounded: the memo never holds more than memoEntries texts, and none longer than memoMaxLen.
func TestMemoBounded(t *testing.T) {
	for i := range 3 * memoEntries {
		Text(fmt.Sprintf("--token=%d", i))
		if n := len(textMemo.m); n > memoEntries {
			t.Fatalf("after %d texts the memo holds %d, want at most %d", i+1, n, memoEntries)
		}
	}
	long := "--password=" + strings.Repeat("x", memoMaxLen)
	if got := Text(long); got != "--password="+Mask {
		t.Errorf("long text redacted to %q", got)
	}
	if _, ok := textMemo.m[long]; ok {
		t.Errorf("a text of %d bytes was kept, over memoMaxLen %d", len(long), memoMaxLen)
	}
}
