package gogen

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/warrenbus/warren/runtime/topology"
)

// topologyConsts names the constants of runtime/topology, so that a
// literal says topology.Quorum rather than "quorum". A value missing here
// is still rendered correctly, as a conversion.
var topologyConsts = map[any]string{
	topology.RoleWork:       "RoleWork",
	topology.RoleRetry:      "RoleRetry",
	topology.RolePoison:     "RolePoison",
	topology.RoleShard:      "RoleShard",
	topology.RoleRequests:   "RoleRequests",
	topology.RoleDelay:      "RoleDelay",
	topology.RoleUnroutable: "RoleUnroutable",
	topology.Quorum:         "Quorum",
	topology.Classic:        "Classic",
	topology.RoleStream:     "RoleStream",
	topology.Stream:         "Stream",
	topology.StartFirst:     "StartFirst",
	topology.StartLast:      "StartLast",
	topology.StartNext:      "StartNext",
	topology.StartOffset:    "StartOffset",
	topology.StartTime:      "StartTime",
}

// alwaysWritten lists the fields written even when zero, because their
// zero value means something a reader should see: a dead-letter exchange
// of "" is the default exchange, which routes by queue name.
var alwaysWritten = map[string]bool{
	"DeadLetter.Exchange": true,
}

// maxInlineFields is how many fields a struct literal may have and still
// sit on one line; longer ones get a line per field, so that a change to
// one queue argument is a one-line diff in a pull request.
const maxInlineFields = 4

// valueLit renders v, a value of a runtime/topology type, as a Go composite
// literal. It walks the value by reflection rather than naming fields, so a
// field added to runtime/topology is never silently left out (golden tests
// compare each compiled literal with topology.Build). Zero fields are
// omitted unless listed in alwaysWritten; strings go through jen.Lit, so no
// name can leave its string.
func valueLit(v reflect.Value) jen.Code {
	t := v.Type()
	switch {
	case t == reflect.TypeOf(time.Duration(0)):
		return durationLit(time.Duration(v.Int()))
	case t == reflect.TypeOf(time.Time{}):
		// A stream consumer's start time, always UTC to the second.
		tm := v.Interface().(time.Time).UTC()
		return jen.Qual(timePath, "Date").Call(jen.Lit(tm.Year()), jen.Qual(timePath, tm.Month().String()), jen.Lit(tm.Day()),
			jen.Lit(tm.Hour()), jen.Lit(tm.Minute()), jen.Lit(tm.Second()), jen.Lit(tm.Nanosecond()), jen.Qual(timePath, "UTC"))
	case t.Kind() == reflect.String && t.PkgPath() != "":
		if name, ok := topologyConsts[v.Interface()]; ok {
			return jen.Qual(t.PkgPath(), name)
		}
		return jen.Qual(t.PkgPath(), t.Name()).Call(jen.Lit(v.String()))
	}
	switch t.Kind() {
	case reflect.String:
		return jen.Lit(v.String())
	case reflect.Bool:
		return jen.Lit(v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return intLit(v.Int())
	case reflect.Pointer:
		return jen.Op("&").Add(valueLit(v.Elem()))
	case reflect.Slice:
		items := make([]jen.Code, v.Len())
		for i := range items {
			items[i] = elemLiteral(v.Index(i))
		}
		return typeOf(t).Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: len(items) > 0}, items...)
	case reflect.Struct:
		return typeOf(t).Add(structFields(v))
	}
	panic(fmt.Sprintf("gogen: cannot render a %s as a literal", t)) // runtime/topology holds plain data only
}

// elemLiteral renders a slice element, leaving out the type the slice
// already names.
func elemLiteral(v reflect.Value) jen.Code {
	if v.Kind() == reflect.Struct {
		return structFields(v)
	}
	return valueLit(v)
}

// structFields renders the {Field: value, ...} part of a struct literal,
// on one line when it is short and holds no slice.
func structFields(v reflect.Value) jen.Code {
	t := v.Type()
	var items []jen.Code
	multi := false
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if !f.IsExported() || fv.IsZero() && !alwaysWritten[t.Name()+"."+f.Name] {
			continue
		}
		if fv.Kind() == reflect.Slice {
			multi = true
		}
		items = append(items, jen.Id(f.Name).Op(":").Add(valueLit(fv)))
	}
	multi = multi || len(items) > maxInlineFields
	return jen.Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: multi}, items...)
}

// typeOf names a type of runtime/topology, or a slice or pointer of one.
func typeOf(t reflect.Type) *jen.Statement {
	switch t.Kind() {
	case reflect.Slice:
		return jen.Index().Add(typeOf(t.Elem()))
	case reflect.Pointer:
		return jen.Op("*").Add(typeOf(t.Elem()))
	}
	return jen.Qual(t.PkgPath(), t.Name())
}

// durationLit writes d in the largest unit that divides it, as
// topology.FormatDelay names delay queues: 20 * time.Millisecond,
// time.Second, 90 * time.Second.
func durationLit(d time.Duration) jen.Code {
	units := []struct {
		size time.Duration
		name string
	}{{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"}, {time.Millisecond, "Millisecond"}}
	if d > 0 {
		for _, u := range units {
			if d%u.size != 0 {
				continue
			}
			if n := int64(d / u.size); n != 1 {
				return jen.Op(strconv.FormatInt(n, 10)).Op("*").Qual(timePath, u.name)
			}
			return jen.Qual(timePath, u.name)
		}
	}
	return jen.Qual(timePath, "Duration").Call(intLit(int64(d)))
}
