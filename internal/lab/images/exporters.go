package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Exporters holds Debian's Prometheus exporters as the machine installed them, for the DaemonSets of
// the ready-made experiment specs (examples/experiments): /usr/bin/prometheus-node-exporter and
// /usr/bin/prometheus-process-exporter with every shared library they load, the loader and an empty /tmp,
// built the way Tools is. It has no shell and no entrypoint: a pod names the program (its PATH is
// /usr/bin). The lab builds and imports it when an experiment's manifests name it
// (lab.Lab.ImportHostImages), never at every up.
var Exporters = Image{Name: "tare.lab/exporters:v1", Source: "exporters", PathEnv: "/usr/bin"}

// exporterPrograms are the programs of Exporters, from the Debian packages of the same names.
var exporterPrograms = []string{"prometheus-node-exporter", "prometheus-process-exporter"}

// ExportersArchive returns the path of Exporters's OCI archive, building it into the cache when
// missing (named, as the tools image's, for the files it holds). A missing exporter is an error matching
// ErrPrerequisite.
func ExportersArchive(ctx context.Context) (string, error) {
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
	layer, key, err := hostLayer(ctx, Exporters, files)
	if err != nil {
		return "", err
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "images", Exporters.Source+"-"+key+".tar")
	if _, err := os.Stat(path); err != nil {
		if err := writeArchiveFile(path, Exporters, layer); err != nil {
			return "", err
		}
		removeOtherArchives(path, Exporters.Source+"-")
	}
	return path, nil
}
