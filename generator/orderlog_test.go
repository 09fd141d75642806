package generator_test

import (
	"context"
	"testing"

	"github.com/warrenbus/warren/generator"
)

// TestOrderLogExampleUpToDate fails when examples/orderlog/orderlogevents
// (the stream consumer's example) is not what `make generate` would write
// from examples/orderlog/events.
func TestOrderLogExampleUpToDate(t *testing.T) {
	files, err := generator.Generate(context.Background(), "../examples/orderlog/events", generator.Options{ImportPath: "github.com/warrenbus/warren/examples/orderlog/orderlogevents"})
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, "../examples/orderlog/orderlogevents", files)
}
