package gogen

import (
	"strings"
	"testing"

	"github.com/warrenbus/warren/generator/model"
)

// TestKitNeedsAnImportPath: the kit imports the generated package, so it
// cannot be written without its path.
func TestKitNeedsAnImportPath(t *testing.T) {
	if _, err := Kit(&model.Model{Package: "shop"}, ""); err == nil {
		t.Fatal("Kit without an import path succeeded")
	}
}

// TestKitNameClashes: names that the generated package keeps apart but
// the kit would not (its own New, Run and Kit; a consumer and a responder
// whose Start methods coincide) are an error naming both, not a kit that
// does not compile.
func TestKitNameClashes(t *testing.T) {
	for _, c := range []struct {
		m    *model.Model
		want []string
	}{
		{&model.Model{Package: "shop", Consumers: []*model.Consumer{{Name: "run"}}}, []string{`Run of consumer "run"`, "func Run"}},
		{&model.Model{Package: "shop", Consumers: []*model.Consumer{{Name: "kit"}}}, []string{`Kit of consumer "kit"`, "type Kit"}},
		{&model.Model{Package: "shop", Consumers: []*model.Consumer{{Name: "published"}}}, []string{`Published of consumer "published"`, "func Published"}},
		{
			&model.Model{Package: "shop", Consumers: []*model.Consumer{{Name: "pricing-responder"}}, Responders: []*model.Responder{{Name: "pricing"}}},
			[]string{`StartPricingResponder of responder "pricing" is also consumer "pricing-responder"`},
		},
	} {
		_, err := Kit(c.m, "example.com/shop")
		if err == nil {
			t.Errorf("%s: Kit succeeded", c.want[0])
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
}

// TestKitOfAnEmptyPackage: a package with nothing to publish or start
// still gets a kit (its tests may use the Bus directly), and it is valid
// Go.
func TestKitOfAnEmptyPackage(t *testing.T) {
	src, err := Kit(&model.Model{Package: "shop"}, "example.com/shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"package shoptest", `"example.com/shop"`, "func New(", "func Run(", "func Published[T any](k *Kit) []T {"} {
		if !strings.Contains(string(src), w) {
			t.Errorf("kit lacks %q:\n%s", w, src)
		}
	}
}
