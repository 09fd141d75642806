package main

import (
	"strings"
	"testing"

	"github.com/warrenbus/warren/cmd/warren/internal/liveversions"
)

// Without the management API, status knows what this schema directory's
// consumers read, not what the processes of older builds still running
// read: right after version 2 is added, every consumer of the directory
// reads version 1 through upcasts while the deployed ones read version 1
// alone. So it does not tell the reader that version 1 can be retired
// outright; it says that the directory's consumers no longer need it and
// what to check first. Asked, with no process reading it, it can be.
func TestStatusDoesNotRetireAVersionOnTheSchemaAlone(t *testing.T) {
	rows := func(asked bool) []consumerStatus {
		r := liveversions.Reads{Consumer: "parcel-tracker", Fact: "parcel.shipped", Schema: []int{1, 2}, Published: []int{1, 2}}
		r = liveversions.Live([]liveversions.Reads{r}, nil, asked)[0]
		return []consumerStatus{{Consumer: "parcel-tracker", Reads: []liveversions.Reads{r}}}
	}

	var out strings.Builder
	if err := writeVersionsTable(&out, rows(false), false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "can be retired") {
		t.Errorf("without the management API, status calls a version retirable:\n%s", out.String())
	}
	for _, want := range []string{"parcel.shipped: the consumers of this schema directory no longer need version 1", "--management-url"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("without the management API, the versions table lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := writeVersionsTable(&out, rows(true), false); err != nil {
		t.Fatal(err)
	}
	if want := "parcel.shipped: no consumer needs version 1 any more: it can be retired from \"versions\"\n"; !strings.Contains(out.String(), want) {
		t.Errorf("with the management API and no process attached, the versions table lacks %q:\n%s", want, out.String())
	}
}
