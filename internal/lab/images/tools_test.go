package images

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tare-dev/tare/internal/testenv"
)

// needTools skips a test when the datapath tools are not installed.
func needTools(t *testing.T) {
	t.Helper()
	if err := CheckTools(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
}

// TestHostLayerKey: the archive's name changes with any file's size or modification time, and the layer
// holds each file with its mode on the machine, plus /tmp.
func TestHostLayerKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "libx.so.1")
	if err := os.WriteFile(lib, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	files := []loadedFile{{Path: "/lib/x86_64-linux-gnu/libx.so.1", Host: lib}}
	key := func() string {
		t.Helper()
		fi, err := os.Stat(lib)
		if err != nil {
			t.Fatal(err)
		}
		layer, k, err := hostLayer(t.Context(), Tools, files)
		if err != nil {
			t.Fatal(err)
		}
		if len(layer) != 2 || layer[0].path != files[0].Path || layer[0].mode != 0o640 || layer[0].prog.size != fi.Size() ||
			layer[1].path != "/tmp" || !layer[1].dir || layer[1].mode != 0o1777 {
			t.Errorf("layer %+v", layer)
		}
		return k
	}
	first := key()
	if key() != first {
		t.Error("the key of unchanged files changed")
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lib, old, old); err != nil {
		t.Fatal(err)
	}
	touched := key()
	if touched == first {
		t.Error("the key did not change with the modification time")
	}
	if err := os.WriteFile(lib, []byte("three"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(lib, old, old); err != nil {
		t.Fatal(err)
	}
	if key() == touched {
		t.Error("the key did not change with the size")
	}
}

// TestToolsArchive builds the datapath tools image from this machine's tools into an empty cache and
// reads it back: the tools at /usr/bin, executable, every library of the walk with its size on the machine,
// /tmp; a second call finds it in the cache. As root, it unpacks the layer and runs each tool's --version
// in a chroot of it: the loader finds every library with no ld.so.cache and nothing of the machine.
func TestToolsArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image of about 100 MB")
	}
	needTools(t)
	t.Setenv("TARE_CACHE_DIR", t.TempDir())
	ctx := t.Context()
	a, err := ToolsArchive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d MB, %d files, tools %v", a.Path, a.Size>>20, a.Files, a.Tools)
	if !a.Built || !slices.Contains(a.Tools, "iperf3") || !slices.Contains(a.Tools, "sockperf") {
		t.Errorf("archive %+v: want built, with iperf3 and sockperf", a)
	}
	_, files, err := toolsFiles()
	if err != nil {
		t.Fatal(err)
	}
	root := ""
	if os.Geteuid() == 0 {
		root = t.TempDir()
	}
	layer := readToolsLayer(t, a.Path, root)
	for _, f := range files {
		fi, err := os.Stat(f.Host)
		if err != nil {
			t.Fatal(err)
		}
		h := layer[f.Path]
		if h == nil || h.Typeflag != tar.TypeReg || h.Size != fi.Size() || h.Mode != int64(fi.Mode().Perm()) {
			t.Errorf("%s (from %s, %d bytes, %v) is in the layer as %+v", f.Path, f.Host, fi.Size(), fi.Mode(), h)
		}
	}
	for _, tool := range a.Tools {
		if h := layer["/usr/bin/"+tool]; h == nil || h.Mode&0o111 == 0 {
			t.Errorf("%s is not an executable in the layer", tool)
		}
	}
	if h := layer["/tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("/tmp in the layer: %+v", h)
	}
	again, err := ToolsArchive(ctx)
	if err != nil || again.Path != a.Path || again.Built || again.Size != a.Size {
		t.Errorf("a second call gave %+v (%v), want the cached %s", again, err, a.Path)
	}
	if root == "" {
		return
	}
	for _, tool := range a.Tools {
		cmd := exec.CommandContext(ctx, "/usr/bin/"+tool, "--version")
		cmd.Env, cmd.Dir = []string{"PATH=/usr/bin"}, "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s --version in the image's files: %v\n%s", tool, err, out)
		}
	}
}

// readToolsLayer reads the layer of the tools archive, streaming (it is big), and unpacks it into root if
// root is not "". The archive's blobs come in the order writeOCIArchive writes them: the manifest before
// the layer it names.
func readToolsLayer(t *testing.T, archive, root string) map[string]*tar.Header {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var layerBlob string
	blobs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("no layer in the archive")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == layerBlob {
			break
		}
		if h.Size > 1<<20 {
			t.Fatalf("%s (%d bytes) comes before the manifest naming the layer", h.Name, h.Size)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		blobs[h.Name] = b
		var doc struct {
			Manifests []ociDescriptor
			Layers    []ociDescriptor
		}
		_ = json.Unmarshal(b, &doc)
		switch {
		case h.Name == "index.json" && len(doc.Manifests) == 1:
			if name := doc.Manifests[0].Annotations["io.containerd.image.name"]; name != Tools.Name {
				t.Errorf("image name %q", name)
			}
		case len(doc.Layers) == 1:
			layerBlob = blobPath(doc.Layers[0])
		}
	}
	out := map[string]*tar.Header{}
	lr := tar.NewReader(tr)
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		out["/"+h.Name] = h
		if root != "" {
			unpack(t, root, h, lr)
		}
	}
}

// unpack writes one layer entry under root.
func unpack(t *testing.T, root string, h *tar.Header, r io.Reader) {
	t.Helper()
	path := filepath.Join(root, h.Name)
	if h.Typeflag == tar.TypeDir {
		if err := os.MkdirAll(path, 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(h.Mode & 0o777)
		if h.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode&0o777))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestToolsImageMissingTool: without iperf3 or sockperf there is no image, and the error says what to
// install, matching ErrPrerequisite.
func TestToolsImageMissingTool(t *testing.T) {
	t.Parallel()
	err := missingToolsError([]string{"/usr/bin/sockperf"})
	if !errors.Is(err, ErrPrerequisite) || !strings.Contains(err.Error(), "apt-get install iperf3 sockperf fio") ||
		!strings.Contains(err.Error(), "tare lab install --datapath") || !strings.Contains(err.Error(), "/usr/bin/sockperf") {
		t.Errorf("error for a missing sockperf: %v", err)
	}
}
