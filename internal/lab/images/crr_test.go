package images

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"testing"

	"github.com/tare-dev/tare/internal/datapath/netpath"
)

// TestCRRMaxSize holds tare-crr's bound on a message (maxSize in crr/main.go, a module of its own
// built from that one file, so it cannot import tare's packages) equal to netpath.MaxCRRSize, with which
// tare datapath net refuses larger --sizes before a run.
func TestCRRMaxSize(t *testing.T) {
	t.Parallel()
	src, _, err := crrSource()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var expr ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.ValueSpec); ok {
			for i, name := range s.Names {
				if name.Name == "maxSize" && i < len(s.Values) {
					expr = s.Values[i]
				}
			}
		}
		return expr == nil
	})
	if expr == nil {
		t.Fatal("crr/main.go declares no const maxSize")
	}
	tv, err := types.Eval(fset, nil, token.NoPos, types.ExprString(expr))
	if err != nil {
		t.Fatalf("maxSize = %s: %v", types.ExprString(expr), err)
	}
	if n, exact := constant.Int64Val(tv.Value); !exact || n != netpath.MaxCRRSize {
		t.Errorf("tare-crr's maxSize is %s, netpath.MaxCRRSize %d: make them equal", tv.Value, netpath.MaxCRRSize)
	}
}
