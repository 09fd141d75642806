package schemadiff

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/warrenbus/warren/runtime/schemaset"
)

func versionsReport(t *testing.T) *Report {
	t.Helper()
	return Compare(loadDir(t, "testdata/versions-side-by-side/old"), loadDir(t, "testdata/versions-side-by-side/new"))
}

var versionsLabels = Labels{Old: "old/events", New: "events"}

// The SARIF report validates against the published SARIF 2.1.0 JSON
// Schema (testdata/sarif), and puts each change at its file and line.
func TestSARIFValidatesAgainstItsSchema(t *testing.T) {
	schema, err := os.ReadFile("testdata/sarif/sarif-2.1.0-rtm.5.json")
	if err != nil {
		t.Fatal(err)
	}
	set := schemaset.New(map[string]string{"sarif.json": string(schema)})
	for name, r := range map[string]*Report{"versions": versionsReport(t), "empty": {}} {
		var b bytes.Buffer
		if err := r.WriteSARIF(&b, versionsLabels); err != nil {
			t.Fatal(err)
		}
		if err := set.Validate("sarif.json", b.Bytes()); err != nil {
			t.Fatalf("%s: SARIF does not match the SARIF 2.1.0 schema: %v\n%s", name, err, b.String())
		}
		if name == "empty" {
			continue
		}
		var log struct {
			Runs []struct {
				Results []struct {
					RuleID    string `json:"ruleId"`
					Level     string `json:"level"`
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string }     `json:"artifactLocation"`
							Region           *struct{ StartLine int } `json:"region"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b.Bytes(), &log); err != nil {
			t.Fatal(err)
		}
		res := log.Runs[0].Results
		if len(res) != len(r.Changes) {
			t.Fatalf("%d results for %d changes", len(res), len(r.Changes))
		}
		first := res[0].Locations[0].PhysicalLocation
		if res[0].RuleID != "required-property-added" || res[0].Level != "warning" || first.ArtifactLocation.URI != "events/order/placed.v2.json" || first.Region == nil || first.Region.StartLine != 11 {
			t.Errorf("first result %+v at %+v: want the intentional required-property-added at events/order/placed.v2.json:11", res[0], first)
		}
	}
	// A report the schema rejects is caught: the check can fail.
	if err := set.Validate("sarif.json", []byte(`{"version": "2.1.0", "runs": [{"results": []}]}`)); err == nil {
		t.Error("a run without a tool validated")
	}
}

// The GitHub report is one workflow command per change, with the file and
// line, the level by verdict, and ':' and ',' escaped in properties.
func TestGitHubAnnotations(t *testing.T) {
	r := versionsReport(t)
	var b bytes.Buffer
	if err := r.WriteGitHub(&b, versionsLabels); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != len(r.Changes)+len(r.Migrations)+1 {
		t.Fatalf("%d lines for %d changes and %d migrations:\n%s", len(lines), len(r.Changes), len(r.Migrations), b.String())
	}
	want := `::warning file=events/order/placed.v2.json,line=11,col=15,title=warren diff%3A required-property-added (intentional)::order.placed /properties/amount: new property "amount" is required`
	if !strings.HasPrefix(lines[0], want) {
		t.Errorf("first line\n%s\nwant prefix\n%s", lines[0], want)
	}
	// The removed property was in the old file: shown on the file, no line.
	if !strings.HasPrefix(lines[2], "::warning file=events/order/placed.v1.json,title=") {
		t.Errorf("old-side change: %s", lines[2])
	}
	if got := ghData("50%\nnext"); got != "50%25%0Anext" {
		t.Errorf("ghData = %q", got)
	}
}

// The migration of a break names the upcasts (generated or hand-written)
// and whether old consumers have a dual publish window.
func TestMigrationNamesUpcastsAndPublishWindow(t *testing.T) {
	r := versionsReport(t)
	m, ok := r.migration("order.placed")
	if !ok {
		t.Fatalf("no migration for order.placed: %+v", r.Migrations)
	}
	for _, want := range []string{"1→2 generated", "2→3 hand-written (UpcastOrderPlacedV2", `"publish": [1, 3]`} {
		if !strings.Contains(m.Message, want) {
			t.Errorf("migration %q lacks %q", m.Message, want)
		}
	}
	if m.Safe {
		t.Error("migration marked safe, though version 1 is not published")
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b, versionsLabels); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "**Migration**\n\n- ⚠️ `order.placed`: consumers built for version 3") {
		t.Errorf("Markdown has no migration section:\n%s", b.String())
	}
}

// An annotation is read on its own, beside its line: each change that
// breaks a fact carries the fact's deploy order in its own message, in
// GitHub's workflow commands and in SARIF (its message and its "deploy"
// property), and no migration refers to a deploy order printed "above",
// which neither format prints.
func TestAnnotationsCarryTheirDeployOrder(t *testing.T) {
	for _, name := range []string{"property-added", "property-removed", "golden/deploy-order", "binding-stopped-matching"} {
		r := Compare(loadDir(t, "testdata/"+name+"/old"), loadDir(t, "testdata/"+name+"/new"))
		if len(r.Deploys) == 0 {
			t.Fatalf("%s: no deploy order", name)
		}
		orders := map[string]string{}
		for _, d := range r.Deploys {
			orders[d.Fact] = d.Message
		}
		var gh, sarif bytes.Buffer
		if err := r.WriteGitHub(&gh, versionsLabels); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteSARIF(&sarif, versionsLabels); err != nil {
			t.Fatal(err)
		}
		for format, out := range map[string]string{"github": gh.String(), "sarif": sarif.String()} {
			if strings.Contains(out, "above") {
				t.Errorf("%s, %s: refers to something above:\n%s", name, format, out)
			}
		}
		lines := strings.Split(strings.TrimSpace(gh.String()), "\n")
		var log struct {
			Runs []struct {
				Results []struct {
					Message    struct{ Text string } `json:"message"`
					Properties map[string]any        `json:"properties"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(sarif.Bytes(), &log); err != nil {
			t.Fatal(err)
		}
		for i, c := range r.Changes {
			order, ok := orders[c.Fact]
			want := ok && c.Breaks != Neither
			line, res := lines[i], log.Runs[0].Results[i]
			if got := strings.HasSuffix(line, ". Deploy order: "+ghData(order)); got != want {
				t.Errorf("%s: github line of %s %s carries its deploy order: %v, want %v:\n%s", name, c.Rule, c.Fact, got, want, line)
			}
			if got := strings.HasSuffix(res.Message.Text, ". Deploy order: "+order); got != want {
				t.Errorf("%s: SARIF message of %s %s carries its deploy order: %v, want %v:\n%s", name, c.Rule, c.Fact, got, want, res.Message.Text)
			}
			if got, _ := res.Properties["deploy"].(string); want && got != order || !want && got != "" {
				t.Errorf("%s: SARIF property deploy of %s %s = %q, want %q", name, c.Rule, c.Fact, got, order)
			}
		}
	}
	// The migration of a break shipped in place says its order itself.
	r := Compare(loadDir(t, "testdata/property-added/old"), loadDir(t, "testdata/property-added/new"))
	var gh bytes.Buffer
	if err := r.WriteGitHub(&gh, versionsLabels); err != nil {
		t.Fatal(err)
	}
	if want := "::notice title=warren diff%3A migration of order.placed::safe only if the consumers of order.placed deploy before its producer;"; !strings.Contains(gh.String(), want) {
		t.Errorf("github output lacks %q:\n%s", want, gh.String())
	}
}
