// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

// Package goexample turns the Go blocks of the repository's documents into programs that the go
// command builds and the tests run, so that a document's Go stays Go that compiles and works.
// A block is one of three kinds:
//
//   - a program: a whole file with its package clause and imports; it is written as it is;
//   - declarations: functions, types, variables without a package clause; they are written into
//     package main with the imports they use, beside a driver the test provides;
//   - statements: the body of a function, as a README shows a few calls; they run in main with a
//     ctx (context.Context) defined, every statement that assigns err is followed by a check that
//     stops the program with the error and the document's line, and the variables the block
//     declares are printed at the end as one JSON object (a value JSON cannot encode as its
//     type), so the test can look at the results.
//
// The imports of declarations and statements are found by name: the standard library's
// packages, the module's packages, and the names the module's own code imports them as
// (paygatev1 for api/v1alpha1). A name that could be two packages must be imported by a program.
// Each file starts with a //line directive, so the compiler's errors name the document's lines.
package goexample

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/paygate/paygate/test/docs/markdown"
)

// Kind is what a Go block holds.
type Kind int

// The kinds of Go blocks.
const (
	Program Kind = iota
	Declarations
	Statements
)

func (k Kind) String() string {
	return [...]string{"program", "declarations", "statements"}[k]
}

// Example is a parsed Go block.
type Example struct {
	Block markdown.Block
	Kind  Kind

	file  *ast.File // the block as a file (programs and declarations) or wrapped in a function
	fset  *token.FileSet
	src   string // what was parsed
	stmts []ast.Stmt
}

// wrapHead wraps statements to parse them.
const wrapHead = "package main\nfunc _() {\n"

// Parse parses a Go block, deciding its kind.
func Parse(b markdown.Block) (*Example, error) {
	e := &Example{Block: b, fset: token.NewFileSet()}
	src := b.Body
	if f, err := parser.ParseFile(e.fset, "block.go", src, parser.ParseComments|parser.SkipObjectResolution); err == nil {
		e.Kind, e.file, e.src = Program, f, src
		return e, nil
	}
	if f, err := parser.ParseFile(e.fset, "block.go", "package main\n"+src, parser.ParseComments|parser.SkipObjectResolution); err == nil {
		e.Kind, e.file, e.src = Declarations, f, "package main\n"+src
		return e, nil
	}
	wrapped := wrapHead + src + "\n}\n"
	f, err := parser.ParseFile(e.fset, "block.go", wrapped, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("%s: the Go block is neither a file, nor declarations, nor statements: %w", b.Where(), err)
	}
	e.Kind, e.file, e.src = Statements, f, wrapped
	e.stmts = f.Decls[0].(*ast.FuncDecl).Body.List
	return e, nil
}

// Declares says whether the block declares a top-level function name (declarations and programs).
func (e *Example) Declares(name string) bool {
	for _, d := range e.file.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name {
			return true
		}
	}
	return false
}

// Uses says whether the block refers to pkg.name (a selector), for finding a block by what it
// does.
func (e *Example) Uses(pkg, name string) bool {
	found := false
	ast.Inspect(e.file, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && x.Name == pkg && s.Sel.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}

// Variables are the names the statements of a Statements block declare at their top level, in
// order ("_" and err left out).
func (e *Example) Variables() []string {
	var out []string
	seen := map[string]bool{"_": true, "err": true}
	add := func(id *ast.Ident) {
		if !seen[id.Name] {
			seen[id.Name] = true
			out = append(out, id.Name)
		}
	}
	for _, s := range e.stmts {
		switch s := s.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				for _, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return out
}

// line directive: the block's first body line in the document.
func (e *Example) lineDirective() string {
	return fmt.Sprintf("//line %s:%d\n", e.Block.Doc, e.Block.Line+1)
}

// Write writes the example as package main into dir (which must be inside the module): the
// block, with the imports it needs, and for statements the harness around them. extra are
// other files (a driver for declarations), by name.
func (e *Example) Write(dir string, r *Resolver, extra map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var main string
	switch e.Kind {
	case Program:
		if e.file.Name.Name != "main" {
			return fmt.Errorf("%s: a Go program in a document must be package main, not %s", e.Block.Where(), e.file.Name.Name)
		}
		main = e.lineDirective() + e.Block.Body
	case Declarations:
		imports, err := r.importsFor(e, nil)
		if err != nil {
			return err
		}
		main = "package main\n\n" + importBlock(imports) + e.lineDirective() + e.Block.Body
	case Statements:
		var err error
		if main, err = e.harness(r); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "example.go"), []byte(main), 0o644); err != nil {
		return err
	}
	for name, text := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// harnessImports are the packages the harness itself uses.
var harnessImports = map[string]string{"context": "context", "fmt": "fmt", "json": "encoding/json", "log": "log", "os": "os", "time": "time"}

// harness writes statements into main: ctx, the block with an err check after every statement
// that assigns err, and the block's variables printed as JSON.
func (e *Example) harness(r *Resolver) (string, error) {
	imports, err := r.importsFor(e, harnessImports)
	if err != nil {
		return "", err
	}
	body := e.src[len(wrapHead) : len(e.src)-len("\n}\n")]
	base := e.fset.File(e.file.Pos()).Base() + len(wrapHead)
	// Insert the checks from the end, so earlier offsets stay right.
	type insert struct {
		at   int
		text string
	}
	var inserts []insert
	for _, s := range e.stmts {
		if assignsErr(s) {
			line := e.fset.Position(s.Pos()).Line - 2 + e.Block.Line // the wrap adds two lines
			inserts = append(inserts, insert{int(s.End()) - base,
				fmt.Sprintf("; if err != nil { log.Fatalf(\"%s:%d: %%v\", err) }", e.Block.Doc, line)})
		}
	}
	for i := len(inserts) - 1; i >= 0; i-- {
		body = body[:inserts[i].at] + inserts[i].text + body[inserts[i].at:]
	}
	var vars []string
	for _, v := range e.Variables() {
		vars = append(vars, strconv.Quote(v)+": "+v)
	}
	var b strings.Builder
	b.WriteString("package main\n\n")
	b.WriteString(importBlock(imports))
	b.WriteString("func main() {\n")
	b.WriteString("\tctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)\n")
	b.WriteString("\tdefer cancel()\n\t_ = ctx\n\tlog.SetFlags(0)\n\t{\n")
	b.WriteString(e.lineDirective())
	b.WriteString(body)
	b.WriteString("\n//line harness.go:1\n")
	// A value JSON cannot encode (a client with its functions) is printed as its type.
	b.WriteString("\t\tharnessOut := map[string]json.RawMessage{}\n")
	b.WriteString("\t\tfor name, v := range map[string]any{" + strings.Join(vars, ", ") + "} {\n")
	b.WriteString("\t\t\tdata, err := json.Marshal(v)\n")
	b.WriteString("\t\t\tif err != nil {\n\t\t\t\tdata, _ = json.Marshal(fmt.Sprintf(\"%T\", v))\n\t\t\t}\n")
	b.WriteString("\t\t\tharnessOut[name] = data\n\t\t}\n")
	b.WriteString("\t\tif err := json.NewEncoder(os.Stdout).Encode(harnessOut); err != nil {\n")
	b.WriteString("\t\t\tlog.Fatal(err)\n\t\t}\n\t}\n}\n")
	return b.String(), nil
}

// assignsErr says whether a statement assigns the variable err at the top level of the block.
func assignsErr(s ast.Stmt) bool {
	a, ok := s.(*ast.AssignStmt)
	if !ok {
		return false
	}
	for _, l := range a.Lhs {
		if id, ok := l.(*ast.Ident); ok && id.Name == "err" {
			return true
		}
	}
	return false
}

func importBlock(imports map[string]string) string {
	if len(imports) == 0 {
		return ""
	}
	names := make([]string, 0, len(imports))
	for n := range imports {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("import (\n")
	for _, n := range names {
		p := imports[n]
		if filepath.Base(p) == n {
			fmt.Fprintf(&b, "\t%q\n", p)
		} else {
			fmt.Fprintf(&b, "\t%s %q\n", n, p)
		}
	}
	b.WriteString(")\n\n")
	return b.String()
}

// Resolver finds the package a name in a block refers to.
type Resolver struct {
	paths map[string][]string // name -> import paths it may be
}

// NewResolver indexes the standard library (go list std) and the module's packages under root,
// with the names the module's code imports them as.
func NewResolver(root string) (*Resolver, error) {
	r := &Resolver{paths: map[string][]string{}}
	add := func(name, path string) {
		for _, p := range r.paths[name] {
			if p == path {
				return
			}
		}
		r.paths[name] = append(r.paths[name], path)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "std")
	cmd.Dir = root
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list std: %v: %s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		path, name, _ := strings.Cut(line, " ")
		if strings.Contains(path, "internal") || strings.HasPrefix(path, "vendor/") || name == "main" {
			continue
		}
		add(name, path)
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := d.Name()
		if d.IsDir() {
			if p != root && (n == "testdata" || n == "bin" || n == "node_modules" || n[0] == '.' || n[0] == '_') {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(n) != ".go" || strings.HasSuffix(n, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return nil // a file that does not parse is the compiler's business
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if f.Name.Name != "main" {
			add(f.Name.Name, markdown.Module+"/"+filepath.ToSlash(rel))
		}
		for _, imp := range f.Imports {
			if imp.Name != nil && imp.Name.Name != "_" && imp.Name.Name != "." {
				if path, err := strconv.Unquote(imp.Path.Value); err == nil && strings.HasPrefix(path, markdown.Module+"/") {
					add(imp.Name.Name, path)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// importsFor returns the imports (name -> path) a declarations or statements block needs, with
// have (name -> path) already imported.
func (r *Resolver) importsFor(e *Example, have map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for n, p := range have {
		out[n] = p
	}
	local := declaredNames(e.file)
	var errs []error
	seen := map[string]bool{}
	ast.Inspect(e.file, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := s.X.(*ast.Ident)
		if !ok || local[x.Name] || seen[x.Name] {
			return true
		}
		seen[x.Name] = true
		if _, ok := out[x.Name]; ok {
			return true
		}
		switch paths := r.paths[x.Name]; len(paths) {
		case 0:
			// not a package: the compiler reports it if it is undefined
		case 1:
			out[x.Name] = paths[0]
		default:
			errs = append(errs, fmt.Errorf("%s: %s could be any of %s: make the block a program with its imports", e.Block.Where(), x.Name, strings.Join(paths, ", ")))
		}
		return true
	})
	return out, errors.Join(errs...)
}

// declaredNames are the names a file binds: functions, types, variables, constants, parameters,
// results, receivers, := and range variables.
func declaredNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			names[n.Name.Name] = true
		case *ast.TypeSpec:
			names[n.Name.Name] = true
		case *ast.ValueSpec:
			for _, id := range n.Names {
				names[id.Name] = true
			}
		case *ast.Field:
			for _, id := range n.Names {
				names[id.Name] = true
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						names[id.Name] = true
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, x := range []ast.Expr{n.Key, n.Value} {
					if id, ok := x.(*ast.Ident); ok {
						names[id.Name] = true
					}
				}
			}
		}
		return true
	})
	return names
}

// Build runs go vet and go build on the package in dir (inside the module rooted at root) and
// writes the program to bin. A failure returns the go command's output, whose positions name
// the document's lines.
func Build(root, dir, bin string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return err
	}
	pkg := "./" + filepath.ToSlash(rel)
	for _, args := range [][]string{{"build", "-o", bin, pkg}, {"vet", pkg}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// Output decodes the JSON object a statements program prints: the block's variables.
func Output(stdout []byte) (map[string]json.RawMessage, error) {
	var vars map[string]json.RawMessage
	if err := json.Unmarshal(stdout, &vars); err != nil {
		return nil, fmt.Errorf("the program's output is not its variables as JSON: %w\n%s", err, stdout)
	}
	return vars, nil
}

// TempDir makes a directory inside the module (under root/test/docs, named _examples-*: the go
// command's patterns such as ./... skip it) and returns it with a function that removes it.
func TempDir(root string) (string, func(), error) {
	dir, err := os.MkdirTemp(filepath.Join(root, "test", "docs"), "_examples-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
