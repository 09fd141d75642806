package load_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/warrenbus/warren/generator/load"
)

// Every problem in a schema directory comes back at once, each naming the
// file, line:column, JSON pointer and what was expected.
func ExampleLoadFS() {
	fsys := fstest.MapFS{
		"warren.json": {Data: []byte(`{"package": "events", "defaults": {"prefetch": "ten"}}`)},
		"order/placed.json": {Data: []byte(`{
  "x-routing-key": "order.*",
  "type": "object"
}`)},
	}
	_, err := load.LoadFS(context.Background(), fsys)
	fmt.Println(err)
	// Output:
	// order/placed.json:2:20: /x-routing-key: expected a routing key of dotted lower-case words such as "order.placed" (letters, digits, '-' and '_'; no '*' or '#'), got "order.*"
	// warren.json:1:48: /defaults/prefetch: expected integer, got "ten"
}

// A document maps any JSON pointer back to where it is in the file.
func ExampleDocument_Position() {
	doc, _ := load.Parse("money.json", []byte("{\n  \"properties\": {\n    \"amount\": {\"type\": \"integer\"}\n  }\n}"))
	line, col, _ := doc.Position("/properties/amount/type")
	fmt.Println(line, col)
	// Output: 3 24
}
