package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaFor reflects the JSON Schema of a tool's input struct, once per
// type: a process serving many hosts defines the tools once for each.
func schemaFor[In any]() json.RawMessage {
	t := reflect.TypeFor[In]()
	if s, ok := schemas.Load(t); ok {
		return s.(json.RawMessage)
	}
	s, _ := schemas.LoadOrStore(t, reflectSchema[In]())
	return s.(json.RawMessage)
}

// schemas holds schemaFor's results by type; validators, newArgValidator's
// by schema. (Both are read only once made.)
var schemas, validators sync.Map

func reflectSchema[In any]() json.RawMessage {
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.Reflect(new(In))
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tools: schema of %T: %v", *new(In), err))
	}
	return b
}

// argValidator checks arguments against a schema after applying the scalar
// coercions models need ("5" → 5, "true" → true).
type argValidator struct {
	schema   map[string]any
	compiled *validator.Schema
}

// newArgValidator compiles schema, once per schema.
func newArgValidator(schema json.RawMessage) *argValidator {
	if v, ok := validators.Load(string(schema)); ok {
		return v.(*argValidator)
	}
	v, _ := validators.LoadOrStore(string(schema), compileArgValidator(schema))
	return v.(*argValidator)
}

func compileArgValidator(schema json.RawMessage) *argValidator {
	v, err := compileSchema(schema, "tool.json", nil)
	if err != nil {
		panic(fmt.Sprintf("tools: %v", err))
	}
	return v
}

// compileSchema compiles schema as the resource named; loader, when not
// nil, is what loads the documents the schema refers to.
func compileSchema(schema json.RawMessage, name string, loader validator.URLLoader) (*argValidator, error) {
	doc, err := validator.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %v", err)
	}
	c := validator.NewCompiler()
	if loader != nil {
		c.UseLoader(loader)
	}
	if err := c.AddResource(name, doc); err != nil {
		return nil, fmt.Errorf("add schema: %v", err)
	}
	compiled, err := c.Compile(name)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %v", err)
	}
	m, _ := doc.(map[string]any)
	return &argValidator{schema: m, compiled: compiled}, nil
}

// ValidatorFor makes the argument check of a tool whose schema comes
// from outside pi-remote (an MCP server's): arguments are coerced and
// validated as the built-in tools' are. The schema may refer only to
// itself: no file is read and no URL fetched to resolve a $ref (the
// schema's author could otherwise make pi-remote read this machine's
// files into an error message). A schema that does not compile is an
// error.
func ValidatorFor(schema json.RawMessage) (func(json.RawMessage) (json.RawMessage, error), error) {
	// (A URL that names nothing, and a loader that loads nothing.)
	v, err := compileSchema(schema, "https://pi-remote.invalid/tool.json", validator.SchemeURLLoader{})
	if err != nil {
		return nil, err
	}
	return v.validate, nil
}

var printer = message.NewPrinter(language.English)

// validate returns the coerced arguments or an error naming each bad field.
func (v *argValidator) validate(args json.RawMessage) (json.RawMessage, error) {
	inst, err := validator.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	inst = coerce(v.schema, inst)
	if err := v.compiled.Validate(inst); err != nil {
		ve, ok := err.(*validator.ValidationError)
		if !ok {
			return nil, err
		}
		var msgs []string
		for _, leaf := range leaves(ve) {
			msg := leaf.ErrorKind.LocalizedString(printer)
			if loc := fieldName(leaf.InstanceLocation); loc != "" {
				msg = fmt.Sprintf("field %q: %s", loc, msg)
			}
			if !slices.Contains(msgs, msg) {
				msgs = append(msgs, msg)
			}
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	out, err := json.Marshal(inst)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func leaves(e *validator.ValidationError) []*validator.ValidationError {
	if len(e.Causes) == 0 {
		return []*validator.ValidationError{e}
	}
	var out []*validator.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// fieldName renders an instance location as edits[0].oldText.
func fieldName(loc []string) string {
	var b strings.Builder
	for _, tok := range loc {
		if _, err := strconv.Atoi(tok); err == nil {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// coerce converts strings to the integers, numbers and booleans the schema
// asks for, recursively through objects and arrays. Anything it cannot
// convert is left for the validator to report.
func coerce(schema map[string]any, v any) any {
	if schema == nil {
		return v
	}
	switch typ, _ := schema["type"].(string); typ {
	case "integer", "number":
		if n, ok := v.(json.Number); ok && typ == "integer" {
			// 5.0 is an integer to JSON Schema; make it one for Go too.
			if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
			return v
		}
		s, ok := v.(string)
		if !ok {
			return v
		}
		s = strings.TrimSpace(s)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return v
		}
		if typ == "integer" {
			if f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
				return v
			}
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(s)
	case "boolean":
		if s, ok := v.(string); ok {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "true":
				return true
			case "false":
				return false
			}
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		props, _ := schema["properties"].(map[string]any)
		for k, val := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				obj[k] = coerce(ps, val)
			}
		}
	case "array":
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		items, _ := schema["items"].(map[string]any)
		for i := range arr {
			arr[i] = coerce(items, arr[i])
		}
	}
	return v
}

// decode unmarshals validated arguments into the tool's input struct.
func decode[In any](args json.RawMessage) (In, error) {
	var in In
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("decode %s arguments: %w", reflect.TypeFor[In]().Name(), err)
	}
	return in, nil
}
