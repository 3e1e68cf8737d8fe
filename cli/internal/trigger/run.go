package trigger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/url"
	"regexp"
	"strings"
	"time"

	"rentalplatform/cli/internal/api"
	"rentalplatform/cli/internal/body"
)

// Runner makes a recipe's calls.
type Runner struct {
	Client *api.Client
	// Vars holds the recipe's inputs, by Input.Var.
	Vars map[string]string
	// Now is the clock of ${today} (the UTC date); time.Now when nil.
	Now func() time.Time
	// Progress, when set, is told of each call just before it is made, with its path expanded.
	Progress func(method, path string)
	// NewIdempotencyKey makes each POST's Idempotency-Key; api.NewIdempotencyKey when nil.
	NewIdempotencyKey func() string
}

// Fixture is an object a named step created (or changed).
type Fixture struct {
	Name   string `json:"name"`
	ID     string `json:"id"`
	Object string `json:"object"`
}

// StepError is a call of a recipe that failed; Err is an *api.APIError when the API answered.
type StepError struct {
	Method, Path string
	Err          error
}

func (e *StepError) Error() string { return e.Method + " " + e.Path + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// MissingInputError is a recipe run without one of its inputs.
type MissingInputError struct{ Input Input }

func (e *MissingInputError) Error() string { return e.Input.Why }

// Missing returns a *MissingInputError for the first input of the recipe that vars lacks, nil
// when it has them all.
func (rec Recipe) Missing(vars map[string]string) error {
	for _, in := range rec.Inputs {
		if vars[in.Var] == "" {
			return &MissingInputError{Input: in}
		}
	}
	return nil
}

// ref is a reference in a step: ${name} (today, or an input) or ${fixture.field.…}.
var ref = regexp.MustCompile(`\$\{([a-z_]+)((?:\.[a-z_0-9]+)*)\}`)

// Run makes the recipe's calls in order and returns the named fixtures. It stops at the first
// call that fails.
func (r Runner) Run(ctx context.Context, rec Recipe) ([]Fixture, error) {
	if err := rec.Missing(r.Vars); err != nil {
		return nil, err
	}
	now, newKey := r.Now, r.NewIdempotencyKey
	if now == nil {
		now = time.Now
	}
	if newKey == nil {
		newKey = api.NewIdempotencyKey
	}
	vars := map[string]string{"today": now().UTC().Format(time.DateOnly)}
	for k, v := range r.Vars {
		vars[k] = v
	}
	answers := map[string]map[string]any{}
	var fixtures []Fixture
	for _, s := range rec.Steps {
		path, err := expand(s.Path, vars, answers, url.PathEscape)
		if err != nil {
			return fixtures, err
		}
		var payload []byte
		var contentType, key string
		if s.Method == "POST" {
			key = newKey()
			if payload, contentType, err = encode(s, vars, answers); err != nil {
				return fixtures, err
			}
		}
		if r.Progress != nil {
			r.Progress(s.Method, path)
		}
		res, err := r.Client.Send(ctx, s.Method, path, contentType, payload, key)
		if err != nil {
			return fixtures, &StepError{Method: s.Method, Path: path, Err: err}
		}
		if s.Fixture == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(res.Body, &obj); err != nil {
			return fixtures, &StepError{Method: s.Method, Path: path, Err: fmt.Errorf("the answer is not a JSON object: %w", err)}
		}
		answers[s.Fixture] = obj
		id, _ := obj["id"].(string)
		kind, _ := obj["object"].(string)
		fixtures = append(fixtures, Fixture{Name: s.Fixture, ID: id, Object: kind})
	}
	return fixtures, nil
}

// encode builds a POST's body: JSON from its parameters, or its multipart upload.
func encode(s Step, vars map[string]string, answers map[string]map[string]any) ([]byte, string, error) {
	if s.Upload == nil {
		params := make([]string, len(s.Params))
		for i, p := range s.Params {
			v, err := expandValue(p, vars, answers)
			if err != nil {
				return nil, "", err
			}
			params[i] = v
		}
		v, err := body.Parse(params)
		if err != nil {
			return nil, "", err
		}
		if v == nil {
			v = map[string]any{}
		}
		b, err := body.Encode(v)
		return b, "application/json", err
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, f := range s.Upload.Fields {
		f, err := expandValue(f, vars, answers)
		if err != nil {
			return nil, "", err
		}
		k, v, _ := strings.Cut(f, "=")
		if err := w.WriteField(k, v); err != nil {
			return nil, "", err
		}
	}
	part, err := w.CreateFormFile(s.Upload.Field, s.Upload.Filename)
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write([]byte(s.Upload.Content)); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// expandValue expands the references in a parameter's value (after its first =), never in its
// key.
func expandValue(param string, vars map[string]string, answers map[string]map[string]any) (string, error) {
	k, v, ok := strings.Cut(param, "=")
	if !ok {
		return param, nil
	}
	v, err := expand(v, vars, answers, func(s string) string { return s })
	return k + "=" + v, err
}

// expand replaces every ${…} of s by its value, passed through escape.
func expand(s string, vars map[string]string, answers map[string]map[string]any, escape func(string) string) (string, error) {
	var errs []error
	out := ref.ReplaceAllStringFunc(s, func(m string) string {
		sub := ref.FindStringSubmatch(m)
		v, err := resolve(sub[1], strings.TrimPrefix(sub[2], "."), vars, answers)
		if err != nil {
			errs = append(errs, err)
			return m
		}
		return escape(v)
	})
	return out, errors.Join(errs...)
}

func resolve(name, fields string, vars map[string]string, answers map[string]map[string]any) (string, error) {
	if fields == "" {
		if v, ok := vars[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf("recipe: ${%s} is neither today nor an input of the recipe", name)
	}
	obj, ok := answers[name]
	if !ok {
		return "", fmt.Errorf("recipe: ${%s.%s} names no earlier fixture", name, fields)
	}
	var v any = obj
	for _, f := range strings.Split(fields, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("recipe: ${%s.%s}: the answer has no %s", name, fields, f)
		}
		v = m[f]
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64, bool:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("recipe: ${%s.%s}: the answer has no such string or number", name, fields)
}

// Check reports what is wrong with a recipe without calling anything: a method other than
// POST or DELETE, a path outside /v1/, a reference to no earlier fixture or declared input, or
// parameters that do not make a body.
func Check(rec Recipe) error {
	if len(rec.Steps) == 0 {
		return errors.New("no steps")
	}
	vars := map[string]string{"today": "2026-01-02"}
	for _, in := range rec.Inputs {
		if in.Var == "" || in.Flag == "" || in.Why == "" {
			return fmt.Errorf("input %+v: want its var, flag and why", in)
		}
		vars[in.Var] = "https://example.com/" + in.Var
	}
	answers := map[string]map[string]any{}
	for i, s := range rec.Steps {
		if s.Method != "POST" && s.Method != "DELETE" {
			return fmt.Errorf("step %d: method %q", i, s.Method)
		}
		if s.Method == "DELETE" && (len(s.Params) > 0 || s.Upload != nil) {
			return fmt.Errorf("step %d: a DELETE with a body", i)
		}
		if s.Upload != nil && len(s.Params) > 0 {
			return fmt.Errorf("step %d: both params and an upload", i)
		}
		if !strings.HasPrefix(s.Path, "/v1/") {
			return fmt.Errorf("step %d: path %q", i, s.Path)
		}
		if _, err := expand(s.Path, vars, answers, url.PathEscape); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		if s.Method == "POST" {
			if _, _, err := encode(s, vars, answers); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
		}
		if s.Fixture != "" {
			if _, dup := answers[s.Fixture]; dup {
				return fmt.Errorf("step %d: fixture %q named twice", i, s.Fixture)
			}
			answers[s.Fixture] = map[string]any{"id": "x_1"}
		}
	}
	return nil
}
