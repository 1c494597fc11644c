package prometheus

import (
	"embed"
	"io/fs"
)

//go:embed prometheus.yml rules.yml rules_test.yml dashboard.json
var files embed.FS

// FS returns the shipped files, at the root of the file system under the names they have in this directory.
func FS() fs.FS { return files }
