package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCLIDocsFresh: the committed CLI reference (docs/cli) is what cobra's doc generator writes from the
// commands as they are now, page for page. Run `make docs` when it fails.
func TestCLIDocsFresh(t *testing.T) {
	t.Parallel()
	fresh := t.TempDir()
	if err := WriteCLIDocs(fresh); err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join("..", "..", CLIDocsDir)
	want, err := readPages(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readPages(committed)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("docs/cli is stale: run make docs (-generated +committed):\n%s", d)
	}
}

// TestCLIDocsDeterministic: two runs of the generator write the same pages, one per command.
func TestCLIDocsDeterministic(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := WriteCLIDocs(d); err != nil {
			t.Fatal(err)
		}
	}
	pa, err := readPages(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := readPages(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(pa, pb); d != "" {
		t.Errorf("two runs of the generator differ:\n%s", d)
	}
	if len(pa) < 20 {
		t.Errorf("%d pages: want one per command", len(pa))
	}
}

func readPages(dir string) (map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pages := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		pages[e.Name()] = string(b)
	}
	return pages, nil
}
