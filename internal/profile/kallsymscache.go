package profile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tare-dev/tare/internal/kernel"
	"github.com/tare-dev/tare/internal/userfile"
)

// Reading /proc/kallsyms costs the kernel about 40 ms of CPU (it decompresses and formats every symbol),
// most of what naming a short profile's frames costs. The kernel image's symbols do not change until the
// next boot, so they are kept in a file per boot (UseCache) and read from there (a few milliseconds)
// whenever every kernel address of a profile lies within the image; addresses in modules, BPF programs or
// trampolines, which come and go, are named from /proc/kallsyms as before. The file holds kernel
// addresses, which kernel.kptr_restrict may hide from other users: it is written only by a process that
// could read them, readable by its owner alone.

// UseCache keeps the kernel image's symbols of this boot under dir/kallsyms (dir "" turns the cache off).
// A failure to read or write the cache only costs the read of /proc/kallsyms.
func (k *Kallsyms) UseCache(dir string) {
	if k == nil || dir == "" {
		return
	}
	b, err := kernel.ReadBounded(filepath.Join(k.procRoot, "sys", "kernel", "random", "boot_id"))
	id := strings.TrimSpace(string(b))
	if err != nil || id == "" || strings.ContainsAny(id, "/.") {
		return
	}
	k.cache = filepath.Join(dir, "kallsyms", id)
}

// namesCached names addrs from the cache, if it exists and every address lies within its symbols.
func (k *Kallsyms) namesCached(addrs []uint64) ([]kname, bool) {
	b, err := os.ReadFile(k.cache)
	if err != nil {
		return nil, false
	}
	got, lo, hi, err := nameFrom(bytes.NewReader(b), addrs, nil)
	if err != nil || addrs[0] < lo || addrs[len(addrs)-1] > hi {
		return nil, false
	}
	return got, true
}

// writeCache writes the image's symbols to the cache, replacing the files of earlier boots.
func (k *Kallsyms) writeCache(image []byte) {
	if len(image) == 0 {
		return
	}
	dir := filepath.Dir(k.cache)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range old {
		_ = os.Remove(f)
	}
	_ = userfile.Write(k.cache, func(w io.Writer) error { // mode 0600
		_, err := w.Write(image)
		return err
	})
}
