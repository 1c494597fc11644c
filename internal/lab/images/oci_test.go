package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ociImage is what an OCI archive holds, checked blob by blob against its descriptors.
type ociImage struct {
	name       string
	entrypoint []string
	env        []string
	layer      map[string]*tar.Header
	order      []string // layer entries as they come
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
		Config struct{ Entrypoint, Env []string }
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
		env:        config.Config.Env,
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
		img.order = append(img.order, "/"+h.Name)
		img.contents["/"+h.Name], _ = io.ReadAll(lr)
	}
	return img
}

func TestWriteOCIArchive(t *testing.T) {
	var buf bytes.Buffer
	bin := []byte("\x7fELF pretend binary")
	if err := writeOCIArchive(&buf, Web, Web.binaryLayer(bytesProgram(bin)), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	img := readOCIArchive(t, &buf)
	if img.name != Web.Name {
		t.Errorf("image name annotation = %q", img.name)
	}
	if len(img.entrypoint) != 1 || img.entrypoint[0] != Web.Binary {
		t.Errorf("entrypoint = %v", img.entrypoint)
	}
	h := img.layer[Web.Binary]
	if len(img.layer) != 1 || h == nil || h.Mode&0o111 == 0 {
		t.Fatalf("layer entries %v", img.layer)
	}
	if !bytes.Equal(img.contents[Web.Binary], bin) {
		t.Error("layer does not hold the binary")
	}
}

// TestWriteOCIArchiveFiles writes an image of several files, as the datapath tools image is: every file
// at its path with its mode and contents, the parent directories each listed once before what they hold,
// an empty /tmp with the sticky bit, no entrypoint and the image's PATH.
func TestWriteOCIArchiveFiles(t *testing.T) {
	t.Parallel()
	img := Image{Name: "tare.lab/test:v1", Source: "test", PathEnv: "/usr/bin"}
	tool, lib, loader := []byte("\x7fELF tool"), bytes.Repeat([]byte("library "), 100_000), []byte("\x7fELF loader")
	files := []layerFile{
		{path: "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2", mode: 0o644, prog: bytesProgram(lib)},
		{path: "/usr/bin/iperf3", mode: 0o755, prog: bytesProgram(tool)},
		{path: "/lib64/ld-linux-x86-64.so.2", mode: 0o755, prog: bytesProgram(loader)},
		{path: "/tmp", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	if err := writeOCIArchive(&buf, img, files, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got := readOCIArchive(t, &buf)
	if got.name != img.Name || got.entrypoint != nil || !slices.Equal(got.env, []string{"PATH=/usr/bin"}) {
		t.Errorf("image %q, entrypoint %v, env %v", got.name, got.entrypoint, got.env)
	}
	type entry struct {
		Type byte
		Mode int64
		Size int64
	}
	want := map[string]entry{
		"/lib64/": {tar.TypeDir, 0o755, 0}, "/lib64/ld-linux-x86-64.so.2": {tar.TypeReg, 0o755, int64(len(loader))},
		"/tmp/": {tar.TypeDir, 0o1777, 0},
		"/usr/": {tar.TypeDir, 0o755, 0}, "/usr/bin/": {tar.TypeDir, 0o755, 0}, "/usr/bin/iperf3": {tar.TypeReg, 0o755, int64(len(tool))},
		"/usr/lib/": {tar.TypeDir, 0o755, 0}, "/usr/lib/x86_64-linux-gnu/": {tar.TypeDir, 0o755, 0},
		"/usr/lib/x86_64-linux-gnu/ceph/":                    {tar.TypeDir, 0o755, 0},
		"/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2": {tar.TypeReg, 0o644, int64(len(lib))},
	}
	have := map[string]entry{}
	for name, h := range got.layer {
		have[name] = entry{h.Typeflag, h.Mode, h.Size}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, not root", name, h.Uid, h.Gid)
		}
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	if !slices.IsSorted(got.order) {
		t.Errorf("layer order %v: a directory must come before what it holds", got.order)
	}
	for path, b := range map[string][]byte{"/usr/bin/iperf3": tool, "/usr/lib/x86_64-linux-gnu/ceph/libceph-common.so.2": lib, "/lib64/ld-linux-x86-64.so.2": loader} {
		if !bytes.Equal(got.contents[path], b) {
			t.Errorf("%s does not hold its contents", path)
		}
	}
	for _, bad := range [][]layerFile{
		{{path: "usr/bin/x", prog: bytesProgram(tool)}},
		{{path: "/usr/bin/../x", prog: bytesProgram(tool)}},
		{{path: "/x", prog: bytesProgram(tool)}, {path: "/x", dir: true}},
		{{path: "/x", prog: bytesProgram(tool)}, {path: "/x/y", prog: bytesProgram(tool)}},
	} {
		if err := writeOCIArchive(io.Discard, img, bad, time.Unix(0, 0)); err == nil {
			t.Errorf("an image of %v was written", bad)
		}
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
	if err := writeOCIArchive(io.Discard, Web, Web.binaryLayer(prog), time.Unix(0, 0)); err == nil {
		t.Error("an archive was written from a binary that changed")
	}
}
