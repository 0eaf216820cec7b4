package prompts_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/prompts"
)

func TestExpand(t *testing.T) {
	review := prompts.Template{Name: "review", Body: "Review $1 for bugs; focus: $2.\nAll: $@ / $ARGUMENTS\n"}
	for _, c := range []struct{ args, want string }{
		{"src/a.go", "Review src/a.go for bugs; focus: .\nAll: src/a.go / src/a.go"},
		{`"src/a b.go" 'error paths'`, "Review src/a b.go for bugs; focus: error paths.\nAll: src/a b.go error paths / src/a b.go error paths"},
		{"$2 x", "Review $2 for bugs; focus: x.\nAll: $2 x / $2 x"},
		{"", "Review  for bugs; focus: .\nAll:  / "},
	} {
		assert.Equal(t, c.want, review.Expand(c.args), c.args)
	}
	plain := prompts.Template{Body: "Explain the diff.\n"}
	assert.Equal(t, "Explain the diff.\n\nin detail", plain.Expand(" in detail "), "arguments are not lost")
	assert.Equal(t, "Explain the diff.", plain.Expand(""))
	assert.Equal(t, "a $10 b", prompts.Template{Body: "a $10 b"}.Expand("1 2 3 4 5 6 7 8 9 $10"))
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("review.md", "---\ndescription: Review a file\n---\nReview $1.\n")
	write("explain.md", "\nExplain this code step by step.\n")
	write("bad.md", "---\ndescription: [x\n---\n")
	write("two words.md", "x")
	write("notes.txt", "not a template")
	found, problems := prompts.Load(dir, true, nil)
	require.Len(t, found, 2)
	assert.Equal(t, prompts.Template{Name: "explain", Description: "Explain this code step by step.", Path: filepath.Join(dir, "explain.md"), User: true, Body: "\nExplain this code step by step.\n"}, found[0])
	assert.Equal(t, "review", found[1].Name)
	assert.Equal(t, "Review a file", found[1].Description)
	require.Len(t, problems, 2)
	assert.Contains(t, problems[0].Error(), filepath.Join(dir, "bad.md")+": yaml: line ")
	assert.Contains(t, problems[1].Error(), "two words.md: a template's name")
}

func TestResolve(t *testing.T) {
	user := []prompts.Template{{Name: "review", Path: "/u/review.md", User: true}, {Name: "model", Path: "/u/model.md", User: true}}
	project := []prompts.Template{{Name: "review", Path: "/p/review.md"}, {Name: "ask", Path: "/p/ask.md"}}
	kept, notes := prompts.Resolve(user, project, []string{"model", "quit"})
	assert.Equal(t, []prompts.Template{project[1], user[0]}, kept)
	assert.Equal(t, []string{
		"prompt template /u/model.md is not used: /model is a built-in command",
		"prompt template /p/review.md is not used: /review is /u/review.md (your own templates come before a project's)",
	}, notes)
}

// A file refuse gives a reason for is left out, and the reason said.
func TestLoadRefuses(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("A"), 0o644))
	found, problems := prompts.Load(dir, false, func(f *os.File, fi os.FileInfo) string { return "planted" })
	assert.Empty(t, found)
	require.Len(t, problems, 1)
	assert.Equal(t, filepath.Join(dir, "a.md")+": not used: planted", problems[0].Error())
}
