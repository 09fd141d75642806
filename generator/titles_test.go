package generator_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/warrenbus/warren/generator"
)

// Two facts given one Go name by their titles are reported once, at the
// title that collides (line, column and JSON pointer), with a fix that
// is not the title the user already set. The fact variables, routing-key
// constants and handler methods named after the type follow from the same
// mistake and are not reported again.
func TestTitleCollisionReportedOnceAtTheTitle(t *testing.T) {
	const borrowed = "{\n  \"x-routing-key\": \"book.borrowed\",\n  \"title\": \"Loan\",\n  \"type\": \"object\",\n  \"properties\": {\"isbn\": {\"type\": \"string\"}}\n}\n"
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{{
		name: "two titles",
		files: map[string]string{
			"warren.json":        `{"package": "libevents", "consumers": {"desk": {"bindings": ["book.*"]}}}`,
			"book/borrowed.json": borrowed,
			"book/returned.json": "{\n  \"x-routing-key\": \"book.returned\",\n  \"title\": \"Loan\",\n  \"type\": \"object\",\n  \"properties\": {\"isbn\": {\"type\": \"string\"}}\n}\n",
		},
		want: `book/returned.json:3:12: /title: Go name "Loan" of this struct is already taken by the struct from book/borrowed.json:3:12 /title; rename one of the titles`,
	}, {
		name: "a title in warren.json's facts",
		files: map[string]string{
			"warren.json":          "{\n  \"package\": \"libevents\",\n  \"facts\": {\"book.returned\": {\"schema\": \"vendor/returned.json\", \"title\": \"Loan\"}}\n}\n",
			"vendor/returned.json": `{"type": "object", "properties": {"isbn": {"type": "string"}}}`,
			"book/borrowed.json":   borrowed,
		},
		want: `warren.json:3:74: /facts/book.returned/title: Go name "Loan" of this struct is already taken by the struct from book/borrowed.json:3:12 /title; rename one of the titles`,
	}, {
		name: "a title and a routing key",
		files: map[string]string{
			"warren.json":        `{"package": "libevents"}`,
			"book/borrowed.json": borrowed,
			"loan.json":          "{\n  \"x-routing-key\": \"loan\",\n  \"type\": \"object\",\n  \"properties\": {\"isbn\": {\"type\": \"string\"}}\n}\n",
		},
		want: `loan.json:2:20: /x-routing-key: Go name "Loan" of this struct is already taken by the struct from book/borrowed.json:3:12 /title; set a "title" to rename one`,
	}, {
		name: "a name every package declares",
		files: map[string]string{
			"warren.json":        `{"package": "libevents"}`,
			"book/borrowed.json": "{\n  \"x-routing-key\": \"book.borrowed\",\n  \"title\": \"Publisher\",\n  \"type\": \"object\",\n  \"properties\": {\"isbn\": {\"type\": \"string\"}}\n}\n",
		},
		want: `book/borrowed.json:3:12: /title: Go name "Publisher" of this struct is already taken by the publisher type Publisher that every generated package declares; change this "title"`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			_, err := generator.Generate(context.Background(), dir, generator.Options{})
			if err == nil {
				t.Fatal("Generate succeeded")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}
