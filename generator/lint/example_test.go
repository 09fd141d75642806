package lint_test

import (
	"context"
	"fmt"

	"github.com/warrenbus/warren/generator/lint"
	"github.com/warrenbus/warren/generator/load"
)

// Run lints a loaded directory; each finding names its rule and severity.
func ExampleRun() {
	s, err := load.Load(context.Background(), "testdata/past-tense")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range lint.Run(lint.NewInput(s, nil)) {
		fmt.Println(f)
	}
	// Output:
	// order/cancel.json:2:20: past-tense: routing key "order.cancel" ends in the verb "cancel", which asks for something to be done; a fact states what happened, e.g. "order.cancelled" (warning)
	// order/rebuild-index.json:2:20: past-tense: routing key "order.rebuild-index" reads as a command ("rebuild" ...); a fact states what happened, e.g. "order.index-rebuilt" (warning)
}
