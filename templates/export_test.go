package templates

import (
	"compress/gzip"
	"encoding/json"
	"io"
)

// WriteRawImage writes an image of a header and SQL as given.
func WriteRawImage(w io.Writer, hdr *ImageHeader, rows []byte) error {
	zw := gzip.NewWriter(w)
	head, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	zw.Write(append(head, '\n'))
	zw.Write(rows)
	return zw.Close()
}
