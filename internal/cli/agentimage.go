package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tare-dev/tare/internal/lab/images"
	"github.com/tare-dev/tare/internal/userfile"
)

// newAgentImage is `tare agent image --out FILE.tar`: the image `tare agent manifest` runs, as an OCI
// archive, for clusters other than the lab.
func newAgentImage(s streams, _ *globalOptions) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "image --out FILE.tar",
		Short: "Write the tare agent's container image as an OCI archive",
		Long: `Write the image tare agent manifest runs by default (` + images.Tare.Name + `) as an OCI archive:
one layer holding this tare binary at /tare, its entrypoint. tare lab up imports the same image into the
lab's containerd. A static tare (make build; CGO_ENABLED=0) is the only file in the image; a tare built
with cgo (go install, or go build where a C compiler exists) comes with its dynamic loader and the shared
libraries it loads, taken from this machine.

The image is for this machine's architecture (tare's own). On each node with containerd, import it where
the kubelet looks:
  ctr -n k8s.io images import FILE.tar
(on kind: kind load image-archive FILE.tar), or push it to your registry, e.g.
  skopeo copy oci-archive:FILE.tar docker://REGISTRY/tare:TAG
and pass --image REGISTRY/tare:TAG to tare agent manifest.`,
		Example: `  tare agent image --out tare-image.tar
  ctr -n k8s.io images import tare-image.tar`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError("--out FILE.tar is required: where to write the image")
			}
			return writeAgentImage(cmd, s, out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", `file to write the OCI archive to ("-" for stdout)`)
	return cmd
}

// writeAgentImage copies the cached image archive to out.
func writeAgentImage(cmd *cobra.Command, s streams, out string) error {
	archive, err := images.TareArchive(cmd.Context())
	if err != nil {
		return err
	}
	src, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer src.Close()
	if out == "-" {
		_, err := io.Copy(s.out, src)
		return err
	}
	err = userfile.WriteMode(out, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the image to %s: %w", out, err)
	}
	fmt.Fprintf(s.err, "wrote %s (%s): import it with ctr -n k8s.io images import %s\n", out, images.Tare.Name, out)
	return nil
}
