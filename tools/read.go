package tools

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type readInput struct {
	Path   string `json:"path" jsonschema_description:"Path to the file to read (relative to the working directory, or absolute)"`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=1" jsonschema_description:"Line number to start reading from (1-indexed)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum number of lines to read"`
}

// ReadDetails are the read tool's details.
type ReadDetails struct {
	Path       string      `json:"path"`
	FirstLine  int         `json:"firstLine,omitempty"`
	LastLine   int         `json:"lastLine,omitempty"`
	TotalLines int         `json:"totalLines,omitempty"` // 0 when not counted
	Truncation *truncation `json:"truncation,omitempty"`
	MimeType   string      `json:"mimeType,omitempty"`
	Size       int64       `json:"size,omitempty"` // bytes, when known without an extra request
}

const (
	maxImageBytes = 20 << 20
	// countBudget bounds how far past the shown lines read keeps counting
	// lines to report the total: huge files are not downloaded whole.
	countBudget = 4 << 20
	sniffBytes  = 8192
)

func readTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "read",
		Description: fmt.Sprintf("Read the contents of a file. Text files are returned as they are, up to %d lines or %dKB, whichever comes first; "+
			"use offset and limit to page through longer files. Images (png, jpeg, gif, webp) are returned as images. Other binary files are described, not dumped."+batchOrder, MaxLines, MaxBytes/1024),
		PromptSnippet: "Read file contents",
		ReadOnly:      true,
		Admit:         AdmitUnder(e),
		PromptGuidelines: []string{
			"Use read to look at files instead of cat or sed.",
		},
		RenderCall: func(args json.RawMessage) string { return renderPathCall("read", args) },
	}, func(ctx context.Context, in readInput, _ func(loop.Result)) (loop.Result, error) {
		return runRead(ctx, e, in)
	})
}

func fileError(p string, err error) (loop.Result, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errorResult("File not found: %s", p)
	case errors.Is(err, fs.ErrPermission):
		return errorResult("Permission denied: %s", p)
	case errors.Is(err, ops.ErrIsDir):
		return errorResult("%s is a directory. Use ls to list it.", p)
	case errors.Is(err, ops.ErrNotDir):
		return errorResult("A parent of %s is not a directory.", p)
	case errors.Is(err, ops.ErrNotRegular):
		return errorResult("%s is not a regular file (a device, FIFO or socket): read, edit and write work on regular files only. Use bash if you must use it.", p)
	case errors.Is(err, ops.ErrConnectionLost):
		return errorResult("Connection to the host was lost: %v. The next call reconnects.", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorResult("Aborted: %s", p)
	}
	return loop.Result{}, err
}

func runRead(ctx context.Context, e *env.ExecutionEnv, in readInput) (loop.Result, error) {
	abs, err := e.Resolve(ctx, in.Path)
	if err != nil {
		return errorResult("Invalid path %q: %v", in.Path, err)
	}
	rc, err := e.Open(ctx, abs)
	if err != nil {
		return fileError(in.Path, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	head, err := br.Peek(sniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fileError(in.Path, err)
	}
	details := ReadDetails{Path: abs}
	// The common path (a text file) needs only Open: the size is asked for
	// only when a notice needs it, which saves a round trip on remote hosts.
	sizeOf := func() int64 {
		if fi, err := e.Stat(ctx, abs); err == nil {
			return fi.Size()
		}
		return -1
	}

	mime := http.DetectContentType(head)
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		data, err := io.ReadAll(io.LimitReader(br, maxImageBytes+1))
		if err != nil {
			return fileError(in.Path, err)
		}
		if len(data) > maxImageBytes {
			return errorResult("%s is a %s image of %s, larger than the %s the read tool returns.", in.Path, mime, formatSize(sizeOf()), formatSize(maxImageBytes))
		}
		details.Size = int64(len(data))
		details.MimeType = mime
		return loop.Result{
			Content: loop.ContentList{
				&loop.Text{Text: fmt.Sprintf("Read image file %s [%s, %s]", in.Path, mime, formatSize(int64(len(data))))},
				&loop.Image{Data: base64.StdEncoding.EncodeToString(data), MimeType: mime},
			},
			Details: details,
		}, nil
	}
	if isBinary(head) {
		details.MimeType, details.Size = mime, sizeOf()
		return loop.Result{
			Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf(
				"%s is a binary file (%s, %s); its content is not shown. Use bash to inspect it (for example: file, xxd | head, or strings).",
				in.Path, mime, formatSize(details.Size))}},
			Details: details,
		}, nil
	}
	return readText(ctx, br, in, abs, details, sizeOf)
}

// isBinary reports content that is not text: a NUL byte in the first block.
func isBinary(head []byte) bool {
	return strings.IndexByte(string(head), 0) >= 0
}

// lineReader yields lines keeping at most keep bytes of each, so that a
// single enormous line never sits in memory whole.
type lineReader struct {
	r    *bufio.Reader
	keep int
	read int64 // bytes consumed
}

// next returns the kept prefix of the next line (with its "\n" when it fits),
// the line's full length, and io.EOF after the last line.
func (l *lineReader) next() (string, int, error) {
	var b strings.Builder
	n := 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		n += len(chunk)
		l.read += int64(len(chunk))
		if room := l.keep - b.Len(); room > 0 {
			b.Write(chunk[:min(room, len(chunk))])
		}
		switch {
		case err == nil:
			return b.String(), n, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if n == 0 {
				return "", 0, io.EOF
			}
			return b.String(), n, nil
		default:
			return "", 0, err
		}
	}
}

func readText(ctx context.Context, br *bufio.Reader, in readInput, abs string, details ReadDetails, sizeOf func() int64) (loop.Result, error) {
	lr := &lineReader{r: br, keep: MaxBytes + 1}
	start := max(in.Offset, 1)
	lineNo := 0
	var kept strings.Builder
	var shown int
	var stop string // why collection stopped: "", "limit", "lines", "bytes", "longline"
	longLine := 0
	eof := false
	for !eof {
		line, full, err := lr.next()
		if errors.Is(err, io.EOF) {
			eof = true
			break
		}
		if err != nil {
			return fileError(in.Path, err)
		}
		lineNo++
		if lineNo < start {
			continue
		}
		if stop != "" {
			// Counting only, within the budget.
			if lr.read > countBudget+int64(kept.Len()) {
				break
			}
			continue
		}
		switch {
		case in.Limit > 0 && shown == in.Limit:
			stop = "limit"
		case shown == MaxLines:
			stop = "lines"
		case full > MaxBytes && shown == 0:
			stop, longLine = "longline", full
		case kept.Len()+full > MaxBytes:
			stop = "bytes"
		default:
			kept.WriteString(line)
			shown++
		}
	}
	if err := ctx.Err(); err != nil {
		return fileError(in.Path, err)
	}
	total := 0
	if eof {
		total = lineNo
		details.Size = lr.read
	}
	if start > 1 && eof && start > lineNo {
		return errorResult("Offset %d is beyond the end of %s, which has %d lines.", start, in.Path, lineNo)
	}
	details.FirstLine, details.LastLine, details.TotalLines = start, start+shown-1, total
	text := strings.ToValidUTF8(kept.String(), "\uFFFD")
	last := start + shown - 1
	totalText := func() string {
		if total > 0 {
			return fmt.Sprintf("%d", total)
		}
		details.Size = sizeOf()
		return fmt.Sprintf("more than %d (file is %s; not counted to the end)", lineNo, formatSize(details.Size))
	}
	var notice string
	switch stop {
	case "longline":
		notice = fmt.Sprintf("Line %d is %s, over the %s limit. Use bash to print a byte range of it: sed -n '%dp' %s | head -c %d",
			start, formatSize(int64(longLine)), formatSize(MaxBytes), start, shellquote.Quote(abs), MaxBytes)
	case "lines", "bytes":
		limitWord := fmt.Sprintf("%d-line", MaxLines)
		if stop == "bytes" {
			limitWord = formatSize(MaxBytes)
		}
		notice = fmt.Sprintf("Showing lines %d-%d of %s (%s limit). Use offset=%d to continue.", start, last, totalText(), limitWord, last+1)
		details.Truncation = &truncation{Truncated: true, By: stop, TotalLines: total, OutputLines: shown, OutputBytes: kept.Len()}
	case "limit":
		if total > 0 {
			notice = fmt.Sprintf("%d more lines in file. Use offset=%d to continue.", total-last, last+1)
		} else {
			notice = fmt.Sprintf("More lines in file. Use offset=%d to continue.", last+1)
		}
	}
	if shown == 0 && stop == "" {
		if lineNo == 0 {
			notice = "The file is empty."
		}
	}
	return loop.Result{Content: loop.ContentList{&loop.Text{Text: withNotice(text, notice)}}, Details: details}, nil
}
