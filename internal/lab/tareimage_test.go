package lab

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestTareImageOfCgoTare: tare built with cgo (as `go install` or `go build` builds it where a C compiler
// exists), run from outside the source tree with no Go on its PATH, writes its own image, and that image
// runs it: the image's files alone, as a root directory, start /tare (chroot), so the loader and every
// library it needs are in it.
func TestTareImageOfCgoTare(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tare")
	}
	testenv.NeedRoot(t, "chroot needs root")
	if _, err := exec.LookPath("gcc"); err != nil {
		testenv.Unavailable(t, "no C compiler to build tare with cgo (make deps installs gcc)")
	}
	src, err := tareSourceDir(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tare")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/tare")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build with cgo: %v\n%s", err, out)
	}
	if !dynamic(t, bin) {
		t.Fatal("tare built with CGO_ENABLED=1 is static: this test needs a dynamically linked tare")
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	cmd := exec.CommandContext(t.Context(), bin, "agent", "image", "--out", archive)
	cmd.Dir = t.TempDir() // no tare source here
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "TARE_CACHE_DIR="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cgo-built tare agent image: %v\n%s", err, out)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := readOCIArchive(t, f)
	self, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img.contents[TareImage.Binary], self) {
		t.Fatal("the image's /tare is not the tare that wrote it")
	}
	root := t.TempDir()
	for _, name := range img.order {
		h := img.layer[name]
		p := filepath.Join(root, name)
		if h.FileInfo().IsDir() {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, img.contents[name], os.FileMode(h.Mode).Perm()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.CommandContext(t.Context(), "chroot", root, TareImage.Binary, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tare") {
		t.Fatalf("the image's tare does not run on the image's files alone: %v\n%s\nimage files: %v", err, out, img.order)
	}
	t.Logf("image of the cgo-built tare: %d files; /tare --version in it: %s", len(img.order), strings.TrimSpace(string(out)))
}

// dynamic says whether the program at path asks for a dynamic loader.
func dynamic(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
