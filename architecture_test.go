package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageDirs are the directories under internal/ and cmd/ that hold a Go package (testdata
// left out), as slash paths from the repository root.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, root := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
				if dir := filepath.ToSlash(filepath.Dir(path)); !slices.Contains(dirs, dir) {
					dirs = append(dirs, dir)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

func architecture(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// Every package under internal/ and cmd/ is named in ARCHITECTURE.md by its path, and every
// path the document names there is a package: a new package gets its row, a removed one
// loses it.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc := architecture(t)
	dirs := packageDirs(t)
	if len(dirs) < 20 {
		t.Fatalf("found only %d packages: %v", len(dirs), dirs)
	}
	for _, dir := range dirs {
		if !strings.Contains(doc, "`"+dir+"`") {
			t.Errorf("ARCHITECTURE.md does not name package %s (as `%s`): give it a row, or name it in its parent's", dir, dir)
		}
	}
	for _, m := range regexp.MustCompile("`((?:internal|cmd)/[a-z0-9/]+)`").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(dirs, strings.TrimSuffix(m[1], "/")) {
			t.Errorf("ARCHITECTURE.md names %s, which is no package", m[1])
		}
	}
}

// Every Go name ARCHITECTURE.md gives as `package.Name` or `package.Type.Member`, for a
// package under internal/, is declared there: a renamed or removed type, function or method
// leaves the document untrue, and this says where.
func TestArchitectureNamesExist(t *testing.T) {
	t.Parallel()
	doc := architecture(t)
	// Declared names per package name: top-level names, and Type.Member for methods and
	// struct fields.
	decls := map[string]map[string]bool{}
	for _, dir := range packageDirs(t) {
		if !strings.HasPrefix(dir, "internal/") {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if decls[f.Name.Name] == nil {
				decls[f.Name.Name] = map[string]bool{}
			}
			declare(decls[f.Name.Name], f)
		}
	}
	checked := 0
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Z][A-Za-z0-9]*(?:\\.[A-Z][A-Za-z0-9]*)?)`").FindAllStringSubmatch(doc, -1) {
		names, ok := decls[m[1]]
		if !ok {
			continue // not a package under internal/ (a file name, main.version)
		}
		checked++
		if !names[m[2]] {
			t.Errorf("ARCHITECTURE.md names %s.%s, which package %s does not declare", m[1], m[2], m[1])
		}
	}
	if checked < 20 {
		t.Errorf("only %d names checked: the pattern no longer reads the document", checked)
	}
}

// Every Go file ARCHITECTURE.md names (`trial.go`, `internal/capacity/validate.go`) is in the
// tree: a file renamed or merged away leaves the row that sends readers to it untrue.
func TestArchitectureNamesFilesThatExist(t *testing.T) {
	t.Parallel()
	doc := architecture(t)
	files := map[string]bool{}
	for _, root := range []string{".", "internal", "cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || root == "." && path != ".") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
				files[d.Name()], files[filepath.ToSlash(path)] = true, true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, m := range regexp.MustCompile("`([a-z0-9_/]+\\.go)`").FindAllStringSubmatch(doc, -1) {
		n++
		if !files[m[1]] {
			t.Errorf("ARCHITECTURE.md names %s, which is no Go file in the tree", m[1])
		}
	}
	if n < 10 {
		t.Errorf("only %d files checked: the pattern no longer reads the document", n)
	}
}

// declare adds the file's declared names: top-level names, and Type.Member for methods and
// struct fields.
func declare(names map[string]bool, f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names[d.Name.Name] = true
				continue
			}
			typ := d.Recv.List[0].Type
			if s, ok := typ.(*ast.StarExpr); ok {
				typ = s.X
			}
			if g, ok := typ.(*ast.IndexExpr); ok {
				typ = g.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				names[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								names[s.Name.Name+"."+n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names[n.Name] = true
					}
				}
			}
		}
	}
}
