//! `GgufFile::parse` (header, metadata of every type, tensor infos, data ranges) on any bytes,
//! then every tensor's bytes and its CPU dequantization: a header that parses must describe
//! only tensors that can be read.

use tpsmeter_model::gguf::GgufFile;

/// One input: see the module's docs.
pub fn run(data: &[u8]) {
    let Ok(file) = GgufFile::parse(data) else {
        return;
    };
    for info in &file.header.tensors {
        // Checked at parse time: a tensor of a parsed file always lies inside the data.
        let bytes = file
            .bytes_of(info)
            .expect("a parsed file's tensor lies inside its data");
        assert_eq!(bytes.len() as u64, info.n_bytes);
        // Dequantizing may fail (an unsupported type), never panic; its output is bounded by
        // the stored bytes (checked above), so this cannot allocate past the input's size.
        let _ = file.dequantize(&info.name);
    }
    let _ = file.header.architecture();
}
