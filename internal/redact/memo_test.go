package redact

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"
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

// TestMemoKeepsNoSubstring: what the memo keeps is its own copy, not a word of the caller's command line,
// which it would hold whole (a command line may be 1 MiB).
func TestMemoKeepsNoSubstring(t *testing.T) {
	line := "-I/usr/include/x" + strings.Repeat(" -DX=1", 1<<12)
	word := line[:len("-I/usr/include/x")]
	if got := Text(word); got != word {
		t.Fatalf("Text(%q) = %q", word, got)
	}
	v, ok := textMemo.m[word]
	if !ok {
		t.Fatalf("%q not remembered", word)
	}
	start, end := uintptr(unsafe.Pointer(unsafe.StringData(line))), uintptr(unsafe.Pointer(unsafe.StringData(line)))+uintptr(len(line))
	if p := uintptr(unsafe.Pointer(unsafe.StringData(v))); p >= start && p < end {
		t.Errorf("the memo's value points into the caller's %d-byte line", len(line))
	}
	for k := range textMemo.m {
		if p := uintptr(unsafe.Pointer(unsafe.StringData(k))); k == word && p >= start && p < end {
			t.Errorf("the memo's key points into the caller's %d-byte line", len(line))
		}
	}
}
