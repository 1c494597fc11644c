package cli

import (
	"github.com/spf13/pflag"

	"github.com/tare-dev/tare/internal/lab"
)

// labDirFlag declares the one flag that names a lab's directory: --dir under tare lab, --lab-dir on every
// other verb that uses a running lab. Its default is lab.DefaultDir() ($TARE_LAB_DIR, else the user's
// state directory), and the docs print that rule in its place (normalizeDefaults); usage says what the
// verb does with the lab.
func labDirFlag(f *pflag.FlagSet, p *string, name, usage string) {
	f.StringVar(p, name, lab.DefaultDir(), usage)
}
