package lab

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ociImage is what an OCI archive holds, checked blob by blob against its descriptors.
type ociImage struct {
	name       string
	entrypoint []string
	layer      map[string]*tar.Header
	contents   map[string][]byte
}

// readOCIArchive reads an archive as `ctr images import` does: index, manifest, config, one layer, each
// blob matching its descriptor's digest and size.
func readOCIArchive(t *testing.T, r io.Reader) ociImage {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	blob := func(d ociDescriptor) []byte {
		t.Helper()
		b, ok := files[blobPath(d)]
		sum := sha256.Sum256(b)
		if !ok || "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || len(b) != d.Size {
			t.Fatalf("blob %s missing or not matching its descriptor", d.Digest)
		}
		return b
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var index struct{ Manifests []ociDescriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	var manifest struct {
		Config ociDescriptor
		Layers []ociDescriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0]), &manifest); err != nil || len(manifest.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	var config struct {
		Config struct{ Entrypoint []string }
		Rootfs struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(blob(manifest.Config), &config); err != nil {
		t.Fatal(err)
	}
	if len(config.Rootfs.DiffIDs) != 1 || config.Rootfs.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Error("an uncompressed layer's diff id is its digest")
	}
	img := ociImage{
		name:       index.Manifests[0].Annotations["io.containerd.image.name"],
		entrypoint: config.Config.Entrypoint,
		layer:      map[string]*tar.Header{},
		contents:   map[string][]byte{},
	}
	lr := tar.NewReader(bytes.NewReader(blob(manifest.Layers[0])))
	for {
		h, err := lr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		img.layer["/"+h.Name] = h
		img.contents["/"+h.Name], _ = io.ReadAll(lr)
	}
	return img
}

func TestWriteOCIArchive(t *testing.T) {
	var buf bytes.Buffer
	bin := []byte("\x7fELF pretend binary")
	if err := writeOCIArchive(&buf, WebImage, bytesProgram(bin), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	img := readOCIArchive(t, &buf)
	if img.name != WebImage.Name {
		t.Errorf("image name annotation = %q", img.name)
	}
	if len(img.entrypoint) != 1 || img.entrypoint[0] != WebImage.Binary {
		t.Errorf("entrypoint = %v", img.entrypoint)
	}
	h := img.layer[WebImage.Binary]
	if len(img.layer) != 1 || h == nil || h.Mode&0o111 == 0 {
		t.Fatalf("layer entries %v", img.layer)
	}
	if !bytes.Equal(img.contents[WebImage.Binary], bin) {
		t.Error("layer does not hold the binary")
	}
}

// TestWriteOCIArchiveChangedBinary: a binary that changes length between the digest pass and the write
// fails the archive instead of writing one whose layer does not match its digest.
func TestWriteOCIArchiveChangedBinary(t *testing.T) {
	calls := 0
	prog := program{size: 4, open: func() (io.ReadCloser, error) {
		calls++
		if calls > 1 {
			return io.NopCloser(bytes.NewReader([]byte("longer"))), nil
		}
		return io.NopCloser(bytes.NewReader([]byte("four"))), nil
	}}
	if err := writeOCIArchive(io.Discard, WebImage, prog, time.Unix(0, 0)); err == nil {
		t.Error("an archive was written from a binary that changed")
	}
}

// TestTareImageArchive builds the tare image as `tare lab up` does from a test binary (tare built from
// this module's source), and checks it holds a static tare as its entrypoint, is cached by the binary's
// digest, and is what the manifest runs by default.
func TestTareImageArchive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tare")
	}
	cache := t.TempDir()
	t.Setenv("TARE_CACHE_DIR", cache)
	stale := filepath.Join(cache, "images", "tare-000000000000.tar")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("an older tare's image"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	if err := staticTare(exe); !errors.Is(err, errNotStatic) {
		t.Fatalf("the test binary is taken for tare: %v", err)
	}
	ctx := context.Background()
	archive, err := TareImageArchive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the older tare's image is still cached: %v", err)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img := readOCIArchive(t, f)
	if img.name != "tare.dev/tare:dev" || len(img.entrypoint) != 1 || img.entrypoint[0] != "/tare" {
		t.Errorf("image %q, entrypoint %v", img.name, img.entrypoint)
	}
	bin := filepath.Join(t.TempDir(), "tare")
	if err := os.WriteFile(bin, img.contents["/tare"], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := staticTare(bin); err != nil {
		t.Errorf("the image's /tare: %v", err)
	}
	if h := img.layer["/tare"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("/tare is not an executable file in the layer: %+v", h)
	}
	again, err := TareImageArchive(ctx)
	if err != nil || again != archive {
		t.Errorf("a second build gave %s (%v), want the cached %s", again, err, archive)
	}
	if !tareImageCached() {
		t.Error("a test's lab would build the tare image again, and say so, though one is cached")
	}
	if !imagesCachedFor(t, bin) {
		t.Error("the image of a static tare is not found in the cache by its digest")
	}
}

// imagesCachedFor says whether the archive of the tare binary at bin is in the cache.
func imagesCachedFor(t *testing.T, bin string) bool {
	t.Helper()
	p, err := tareArchivePath(bin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(p)
	return err == nil
}
