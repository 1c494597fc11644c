package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
)

// PluginName is the program name kubectl runs tare by as a plugin: kubectl tare ARGS runs the first
// kubectl-tare on the PATH with ARGS. Run by that name (a link to tare, as tare plugin install and krew
// make), tare is the same program and names itself "kubectl tare" in its help and errors.
const PluginName = "kubectl-tare"

// isPlugin says whether argv0, the name the program was run by, is kubectl's plugin name.
func isPlugin(argv0 string) bool { return filepath.Base(argv0) == PluginName }

// newPlugin is tare plugin: how kubectl runs tare.
func newPlugin(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Run tare as a kubectl plugin (kubectl tare ...)",
		Long: `kubectl runs a program named kubectl-tare on the PATH as "kubectl tare". Run by that name, tare is
the same program: kubectl tare measure, kubectl tare density -n NS --context CTX. kubectl's flags that
tare's verbs share keep their meaning: --kubeconfig, --context, -n/--namespace.`,
	}
	cmd.AddCommand(newPluginInstall(s))
	return cmd
}

func newPluginInstall(s streams) *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Link kubectl-tare to this tare, so that kubectl tare runs it",
		Long: `install makes DIR/kubectl-tare a symbolic link to this tare executable (DIR: --dir, default the
directory tare is in, which is on the PATH when tare is). kubectl plugin list then shows it. An existing
kubectl-tare that is not such a link is left alone unless --force. With krew, install the manifest in
deploy/krew instead (kubectl krew install --manifest deploy/krew/tare.yaml).`,
		Example: `  sudo tare plugin install
  tare plugin install --dir ~/.local/bin
  kubectl tare measure --duration 30s`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return runPluginInstall(s, dir, force)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to put kubectl-tare in (default: tare's own)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing kubectl-tare that is not a link to tare")
	return cmd
}

func runPluginInstall(s streams, dir string, force bool) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding tare's executable: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return fmt.Errorf("finding tare's executable: %w", err)
	}
	if dir == "" {
		dir = filepath.Dir(self)
	}
	link := filepath.Join(dir, PluginName)
	if to, err := os.Readlink(link); err == nil && to == self {
		fmt.Fprintf(s.out, "%s already links to %s\n", link, self)
		return onPath(s, dir)
	}
	if _, err := os.Lstat(link); err == nil {
		if !force {
			return usageError("%s exists and is not a link to %s: remove it, or pass --force", link, self)
		}
		if err := os.Remove(link); err != nil {
			return fmt.Errorf("replacing %s: %w", link, err)
		}
	}
	if err := os.Symlink(self, link); err != nil {
		return fmt.Errorf("linking %s to tare: %w", link, err)
	}
	fmt.Fprintf(s.out, "linked %s -> %s: kubectl tare runs tare\n", link, self)
	return onPath(s, dir)
}

// onPath warns when dir is not on the PATH, where kubectl looks for plugins.
func onPath(s streams, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(filepath.SplitList(os.Getenv("PATH")), func(p string) bool {
		a, err := filepath.Abs(p)
		return err == nil && a == abs
	}) {
		fmt.Fprintf(s.err, "warning: %s is not on the PATH: kubectl finds plugins on the PATH only\n", abs)
	}
	return nil
}
