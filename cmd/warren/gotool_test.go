package main

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warrenbus/warren/examples/catalogue/catalogueevents"
)

// The setup docs/CLI.md gives a service: warren as a tool dependency
// (go get -tool), a //go:generate go tool warren directive in a
// hand-written file of the output package, go generate ./... . A module
// outside the repository does exactly that, with a replace directive to
// this checkout, and must build and vet.
func TestGoToolSetupInAService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(goMod)
	if goLine == nil {
		t.Fatal("no go directive in go.mod")
	}
	warrenGo := string(goLine[1])

	svc := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(svc, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The service says the same go version as warren: tidy must not need
	// a newer one.
	write("go.mod", "module example.com/shop\n\ngo "+warrenGo+"\n\n"+
		"require github.com/warrenbus/warren v0.0.0\n\n"+
		"replace github.com/warrenbus/warren => "+root+"\n")
	// The checkout's sums cover every module warren needs; the checksum
	// database is not reachable from every machine that runs this.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sums))
	copyTree(t, filepath.Join(root, "examples", "catalogue", "events"), filepath.Join(svc, "events"))
	// The directive lives in a hand-written file of the output package,
	// below the package clause and without a doc comment: the package
	// comment is the one warren writes into warren.go.
	write("internal/catalogueevents/generate.go", "package catalogueevents\n\n"+
		"//go:generate go tool warren generate ../../events\n")
	write("main.go", `package main

import (
	"context"
	"errors"
	"fmt"

	"example.com/shop/internal/catalogueevents"
	"github.com/warrenbus/warren/runtime"
)

type mailer struct{}

func (mailer) HandleOrderPlaced(ctx context.Context, d runtime.Delivery, o catalogueevents.OrderPlaced) error {
	return errors.New("not in this test")
}

var _ catalogueevents.OrderMailerHandler = mailer{}

func main() {
	fmt.Println(catalogueevents.OrderPlacedRoutingKey, len(catalogueevents.Topology.Queues))
}
`)

	// The service's module graph holds modules that warren's
	// dependencies require only for their own tests (the go command reads
	// the go.mod of github.com/stretchr/testify, for one): building warren
	// never downloads them, so they are fetched through the environment's
	// GOPROXY, as they are for a new service.
	goEnv(t)
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = svc
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	goCmd("get", "-tool", "github.com/warrenbus/warren/cmd/warren")
	if v := goCmd("tool", "warren", "--version"); v != "warren v0.0.0 (replaced by "+root+")\n" {
		t.Errorf("go tool warren --version printed %q", v)
	}
	// A test of the service drives its handler through the generated kit
	// on the in-process bus: the kit was generated with the service's
	// import path of the package.
	write("main_test.go", `package main

import (
	"testing"
	"time"

	"example.com/shop/internal/catalogueevents"
	"example.com/shop/internal/catalogueevents/catalogueeventstest"
)

func TestMailerWithTheKit(t *testing.T) {
	catalogueeventstest.Run(t, func(t *testing.T, k *catalogueeventstest.Kit) {
		k.StartOrderMailer(mailer{})
		price := catalogueevents.Money{Amount: 1999, Currency: catalogueevents.CurrencyEUR}
		k.PublishOrderPlaced(catalogueevents.OrderPlaced{
			OrderID:  "7d0c7f68-1c1b-4bc4-9e2f-3c7a3c1f8e11",
			Customer: catalogueevents.OrderPlacedCustomer{CustomerID: "c-42", Email: "ada@example.com"},
			Lines:    []catalogueevents.OrderLine{{Sku: "BOOK-123", Quantity: 2, UnitPrice: price}},
			Total:    catalogueevents.Money{Amount: 3998, Currency: catalogueevents.CurrencyEUR},
			Payment:  catalogueevents.OrderPlacedPayment{InvoicePayment: &catalogueevents.InvoicePayment{Method: catalogueevents.InvoicePaymentMethodInvoice, DueDays: catalogueevents.InvoicePaymentDueDays30}},
			PlacedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		})
		k.Idle()
		if n := len(k.Poisoned(catalogueeventstest.OrderMailer)); n != 1 {
			t.Errorf("%d facts poisoned, want the one the mailer keeps failing", n)
		}
	})
}
`)
	goCmd("generate", "./...")
	goCmd("mod", "tidy")
	goCmd("build", "./...")
	goCmd("vet", "./...")
	if out := goCmd("test", "-v", "-run", "^TestMailerWithTheKit$", "."); !strings.Contains(out, "--- PASS: TestMailerWithTheKit") {
		t.Errorf("the service's test of its handler through the kit did not pass:\n%s", out)
	}
	// The service's generated package is the example's, compiled there.
	if out, want := goCmd("run", "."), fmt.Sprintf("order.placed %d\n", len(catalogueevents.Topology.Queues)); out != want {
		t.Errorf("the service printed %q, want %q", out, want)
	}

	mod, err := os.ReadFile(filepath.Join(svc, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(mod, []byte("\ngo "+warrenGo+"\n")) || bytes.Contains(mod, []byte("\ntoolchain ")) {
		t.Errorf("go mod tidy changed the Go version the service needs:\n%s", mod)
	}
	if !bytes.Contains(mod, []byte("\ntool github.com/warrenbus/warren/cmd/warren\n")) {
		t.Errorf("go.mod has no tool directive:\n%s", mod)
	}

	// One package comment, warren's; the directive file has none.
	pkgDir := filepath.Join(svc, "internal", "catalogueevents")
	pkgs, err := parser.ParseDir(token.NewFileSet(), pkgDir, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			if f.Doc != nil {
				documented = append(documented, filepath.Base(name))
			}
		}
	}
	if len(documented) != 1 || documented[0] != "warren.go" {
		t.Errorf("files with a package comment: %v, want [warren.go]", documented)
	}
	// And the output is what the checkout generates: up to date.
	cmd := exec.Command(goBin, "tool", "warren", "generate", "--check", "../../events")
	cmd.Dir = pkgDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("generate --check after go generate: %v\n%s", err, out)
	}
}
