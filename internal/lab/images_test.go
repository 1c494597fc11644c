package lab

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"testing"
	"time"
)

func TestWriteOCIArchive(t *testing.T) {
	var buf bytes.Buffer
	bin := []byte("\x7fELF pretend binary")
	if err := writeOCIArchive(&buf, WebImage, bin, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
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
	var index struct{ Manifests []ociDescriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if index.Manifests[0].Annotations["io.containerd.image.name"] != WebImage.Name {
		t.Errorf("image name annotation = %v", index.Manifests[0].Annotations)
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
	if len(config.Config.Entrypoint) != 1 || config.Config.Entrypoint[0] != WebImage.Binary {
		t.Errorf("entrypoint = %v", config.Config.Entrypoint)
	}
	layer := blob(manifest.Layers[0])
	if config.Rootfs.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Error("an uncompressed layer's diff id is its digest")
	}
	lr := tar.NewReader(bytes.NewReader(layer))
	h, err := lr.Next()
	if err != nil || "/"+h.Name != WebImage.Binary || h.Mode&0o111 == 0 {
		t.Fatalf("layer entry %+v, %v", h, err)
	}
	if got, _ := io.ReadAll(lr); !bytes.Equal(got, bin) {
		t.Error("layer does not hold the binary")
	}
}
