package schemadiff_test

import (
	"context"
	"fmt"
	"os"

	"github.com/warrenbus/warren/generator/schemadiff"
)

// Compare classifies each change; a breaking change to a fact whose
// x-version was not raised is what fails `warren diff`.
func ExampleCompare() {
	ctx := context.Background()
	old, err := schemadiff.Load(ctx, "testdata/property-removed/old")
	if err != nil {
		fmt.Println(err)
		return
	}
	cur, err := schemadiff.Load(ctx, "testdata/property-removed/new")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := schemadiff.Compare(old, cur)
	for _, c := range r.Changes {
		fmt.Println(c.Verdict, c.Rule, c.Fact, c.Path)
	}
	fmt.Println("unannounced:", r.Unannounced())
	// Output:
	// breaking property-removed order.placed /properties/note
	// unannounced: 1
}

// A report prints positions under the label of the directory they are in,
// here a git revision for the old side.
func ExampleReport_WriteText() {
	ctx := context.Background()
	old, _ := schemadiff.Load(ctx, "testdata/property-removed-announced/old")
	cur, _ := schemadiff.Load(ctx, "testdata/property-removed-announced/new")
	r := schemadiff.Compare(old, cur)
	_ = r.WriteText(os.Stdout, schemadiff.Labels{Old: "origin/main:events", New: "events"})
	// Output:
	// origin/main:events/order/placed.json:32:13: intentional: property-removed: order.placed /properties/note: property "note" was removed: facts written under the old schema carry it and the object is closed; breaks backward (new consumers, old facts) in FULL
	// events/order/placed.json:69:16: compatible: version-raised: order.placed: x-version raised from 1 to 2 to announce 1 change that breaks consumers
	// 1 intentional breaking change, 1 compatible change
	// deploy order: deploy the producer of order.placed before its consumers, and those only once no fact written under the old schema is left to read (queues, poison queues, outboxes)
	// migration: order.placed: safe only if the producer of order.placed deploys before its consumers, and they only once no old fact is left to read; to ship without waiting, keep version 1 (order/placed.json) beside version 2, in a file of its own, so that new consumers read old facts through upcasts
}
