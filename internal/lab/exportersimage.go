package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ExportersImage holds Debian's Prometheus exporters as the machine installed them, for the DaemonSets of
// the ready-made experiment specs (examples/experiments): /usr/bin/prometheus-node-exporter and
// /usr/bin/prometheus-process-exporter with every shared library they load, the loader and an empty /tmp,
// built the way ToolsImage is. It has no shell and no entrypoint: a pod names the program (its PATH is
// /usr/bin). The lab builds and imports it when an experiment's manifests name it (ImportHostImages), never at
// every up.
var ExportersImage = Image{Name: "tare.lab/exporters:v1", Source: "exporters", PathEnv: "/usr/bin"}

// exporterPrograms are the programs of ExportersImage, from the Debian packages of the same names.
var exporterPrograms = []string{"prometheus-node-exporter", "prometheus-process-exporter"}

// ExportersImageArchive returns the path of ExportersImage's OCI archive, building it into the cache when
// missing (named, as the tools image's, for the files it holds). A missing exporter is an error matching
// ErrPrerequisite.
func ExportersImageArchive(ctx context.Context) (string, error) {
	var progs, missing []string
	for _, name := range exporterPrograms {
		p := "/usr/bin/" + name
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, name)
			continue
		}
		progs = append(progs, p)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("the exporters image needs %s: apt-get install %s: %w",
			strings.Join(missing, " and "), strings.Join(missing, " "), ErrPrerequisite)
	}
	files, err := sharedLibraries(progs...)
	if err != nil {
		return "", fmt.Errorf("finding the libraries of %s: %w", strings.Join(exporterPrograms, ", "), err)
	}
	layer, key, err := hostLayer(ctx, ExportersImage, files)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "images", ExportersImage.Source+"-"+key+".tar")
	if _, err := os.Stat(path); err != nil {
		if err := writeArchiveFile(path, ExportersImage, layer); err != nil {
			return "", err
		}
		removeOtherArchives(path, ExportersImage.Source+"-")
	}
	return path, nil
}

// ImportHostImages imports into every real node of the lab in labDir those of refs (image references a
// pod names) that the lab builds from the machine's programs only on demand: ToolsImage and ExportersImage.
// Other references are left to containerd (the lab's own images are imported at every up). A node that
// already holds the image's build is left alone.
func ImportHostImages(ctx context.Context, labDir string, refs []string) error {
	seen := map[string]bool{}
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		var err error
		switch ref {
		case ToolsImage.Name:
			err = ImportToolsImage(ctx, labDir)
		case ExportersImage.Name:
			err = importHostImage(ctx, labDir, ExportersImage, ExportersImageArchive)
		}
		if err != nil {
			return fmt.Errorf("importing %s: %w", ref, err)
		}
	}
	return nil
}
