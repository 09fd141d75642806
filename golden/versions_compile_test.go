package golden_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A handler of a consumer that reads an older version through a
// hand-written upcast does not compile without it: the generated handler
// interface embeds the upcaster's. Built with the go command over a
// package that exists only in an overlay, so nothing is written into the
// module.
func TestMissingUpcasterDoesNotCompile(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	const handler = `package missingupcast

import (
	"context"

	versions "github.com/warrenbus/warren/golden/versions/want"
	"github.com/warrenbus/warren/runtime"
)

type ledger struct{}

func (ledger) HandleOrderPlaced(context.Context, runtime.Delivery, versions.OrderPlaced) error   { return nil }
func (ledger) HandleOrderShipped(context.Context, runtime.Delivery, versions.OrderShipped) error { return nil }
%s
var _, _ = versions.NewLedgerConsumer(nil, ledger{})
`
	upcast := "func (ledger) UpcastOrderPlacedV2(versions.OrderPlacedV2) (versions.OrderPlaced, error) { return versions.OrderPlaced{}, nil }\n"
	dir := t.TempDir()
	pkg, err := filepath.Abs("versions/missingupcast")
	if err != nil {
		t.Fatal(err)
	}
	build := func(src string) (string, error) {
		file := filepath.Join(dir, "handler.go")
		if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "handler.go"): file}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(gobin, "build", "-o", os.DevNull, "-overlay", ov, "./versions/missingupcast").CombinedOutput()
		return string(out), err
	}
	if out, err := build(strings.Replace(handler, "%s", upcast, 1)); err != nil {
		t.Fatalf("the handler with its upcaster does not compile: %v\n%s", err, out)
	}
	out, err := build(strings.Replace(handler, "%s", "", 1))
	if err == nil || !strings.Contains(out, "missing method UpcastOrderPlacedV2") {
		t.Errorf("without the upcaster: err %v, output:\n%s\nwant a compile error naming UpcastOrderPlacedV2", err, out)
	}
}
