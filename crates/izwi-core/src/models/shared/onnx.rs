//! A bounded reader for the parts of an ONNX file a weight loader needs: the graph's
//! initializers (name, shape, data), its nodes (which tensors each consumes, and the
//! integer attributes of convolutions) and the names of its inputs and outputs. ONNX is
//! protobuf; this decodes the wire format directly, so no protoc and no ONNX runtime
//! are needed. Every length is checked against what is left, so corrupt or hostile
//! bytes give an error, never a panic or a huge allocation. Tensor data is borrowed
//! from the file's bytes, not copied.

use std::borrow::Cow;

use candle_core::{DType, Device, Tensor};

#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error("the ONNX file is cut short or corrupt: {0}")]
    Corrupt(&'static str),
    #[error("the ONNX file has no graph")]
    NoGraph,
    #[error("tensor {name:?} has ONNX data type {data_type}, which Izwi does not read")]
    UnsupportedType { name: String, data_type: i32 },
    #[error("tensor {name:?} keeps its data in an external file, which Izwi does not read")]
    ExternalData { name: String },
    #[error("tensor {name:?} has shape {dims:?} but {bytes} bytes of data")]
    ShapeMismatch {
        name: String,
        dims: Vec<i64>,
        bytes: usize,
    },
    #[error("node {node:?} has attribute {attribute} out of range")]
    AttributeOutOfRange {
        node: String,
        attribute: &'static str,
    },
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

// TensorProto.DataType numbers.
const FLOAT: i32 = 1;
const INT64: i32 = 7;
const FLOAT16: i32 = 10;

/// A constant tensor of the graph. Its type is only checked when it is converted, so a
/// graph holding constants of types Izwi never reads still parses.
#[derive(Debug, Clone)]
pub struct Initializer<'a> {
    pub name: String,
    pub dims: Vec<i64>,
    /// TensorProto.DataType: 1 float, 7 int64, 10 float16, ...
    pub data_type: i32,
    /// The values as little-endian bytes.
    data: Cow<'a, [u8]>,
    external: bool,
}

impl Initializer<'_> {
    pub fn is_float(&self) -> bool {
        matches!(self.data_type, FLOAT | FLOAT16)
    }

    pub fn to_tensor(&self, device: &Device) -> Result<Tensor, OnnxError> {
        if self.external {
            return Err(OnnxError::ExternalData {
                name: self.name.clone(),
            });
        }
        let dtype = match self.data_type {
            FLOAT => DType::F32,
            FLOAT16 => DType::F16,
            INT64 => DType::I64,
            data_type => {
                return Err(OnnxError::UnsupportedType {
                    name: self.name.clone(),
                    data_type,
                })
            }
        };
        let mismatch = || OnnxError::ShapeMismatch {
            name: self.name.clone(),
            dims: self.dims.clone(),
            bytes: self.data.len(),
        };
        let shape: Vec<usize> = self
            .dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| mismatch()))
            .collect::<Result<_, _>>()?;
        let bytes = shape
            .iter()
            .try_fold(dtype.size_in_bytes(), |acc, &d| acc.checked_mul(d));
        if bytes != Some(self.data.len()) {
            return Err(mismatch());
        }
        Ok(Tensor::from_raw_buffer(&self.data, dtype, &shape, device)?)
    }
}

/// An attribute of a node; only integer ones are kept (strides, pads, dilations, group).
#[derive(Debug, Clone, Default)]
pub struct Attribute {
    pub name: String,
    pub ints: Vec<i64>,
}

#[derive(Debug, Clone, Default)]
pub struct Node {
    pub name: String,
    pub op_type: String,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    pub attributes: Vec<Attribute>,
}

impl Node {
    /// An integer or integer-list attribute.
    pub fn ints(&self, name: &str) -> Option<&[i64]> {
        self.attributes
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.ints.as_slice())
    }
}

#[derive(Debug, Clone, Default)]
pub struct OnnxModel<'a> {
    pub initializers: Vec<Initializer<'a>>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
}

impl<'a> OnnxModel<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, OnnxError> {
        let mut graph = None;
        for field in Fields::new(bytes) {
            let (number, value) = field?;
            // ModelProto.graph
            if number == 7 {
                graph = Some(parse_graph(value.bytes()?)?);
            }
        }
        graph.ok_or(OnnxError::NoGraph)
    }

    /// The nodes that read tensor `name`, with the input slot it fills.
    pub fn consumers<'s>(&'s self, name: &'s str) -> impl Iterator<Item = (&'s Node, usize)> + 's {
        self.nodes.iter().flat_map(move |node| {
            node.inputs
                .iter()
                .enumerate()
                .filter(move |(_, input)| *input == name)
                .map(move |(slot, _)| (node, slot))
        })
    }
}

fn parse_graph(bytes: &[u8]) -> Result<OnnxModel<'_>, OnnxError> {
    let mut model = OnnxModel::default();
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => model.nodes.push(parse_node(value.bytes()?)?),
            5 => model.initializers.push(parse_tensor(value.bytes()?)?),
            11 => model.inputs.push(value_info_name(value.bytes()?)?),
            12 => model.outputs.push(value_info_name(value.bytes()?)?),
            _ => {}
        }
    }
    Ok(model)
}

fn parse_node(bytes: &[u8]) -> Result<Node, OnnxError> {
    let mut node = Node::default();
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => node.inputs.push(value.string()?),
            2 => node.outputs.push(value.string()?),
            3 => node.name = value.string()?,
            4 => node.op_type = value.string()?,
            5 => node.attributes.push(parse_attribute(value.bytes()?)?),
            _ => {}
        }
    }
    Ok(node)
}

fn parse_attribute(bytes: &[u8]) -> Result<Attribute, OnnxError> {
    let mut attribute = Attribute::default();
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => attribute.name = value.string()?,
            // AttributeProto.i and .ints
            3 | 8 => value.for_each_varint(|v| attribute.ints.push(v as i64))?,
            _ => {}
        }
    }
    Ok(attribute)
}

fn value_info_name(bytes: &[u8]) -> Result<String, OnnxError> {
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        if number == 1 {
            return value.string();
        }
    }
    Ok(String::new())
}

fn parse_tensor(bytes: &[u8]) -> Result<Initializer<'_>, OnnxError> {
    let mut tensor = Initializer {
        name: String::new(),
        dims: Vec::new(),
        data_type: 0,
        data: Cow::Borrowed(&[]),
        external: false,
    };
    let mut raw = None;
    let mut typed = Vec::new();
    for field in Fields::new(bytes) {
        let (number, value) = field?;
        match number {
            1 => value.for_each_varint(|v| tensor.dims.push(v as i64))?,
            2 => tensor.data_type = value.varint()? as i32,
            4 => value.for_each_fixed32(|v| typed.extend_from_slice(&v.to_le_bytes()))?,
            // int32_data: float16 values travel here as their 16 bits, one per varint.
            5 => value.for_each_varint(|v| typed.extend_from_slice(&(v as u16).to_le_bytes()))?,
            7 => value.for_each_varint(|v| typed.extend_from_slice(&v.to_le_bytes()))?,
            8 => tensor.name = value.string()?,
            9 => raw = Some(value.bytes()?),
            // data_location = EXTERNAL
            14 => tensor.external = value.varint()? == 1,
            _ => {}
        }
    }
    tensor.data = match raw {
        Some(raw) => Cow::Borrowed(raw),
        None => Cow::Owned(typed),
    };
    Ok(tensor)
}

/// One field's payload (64-bit fixed fields are skipped: nothing read here uses them).
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

impl<'a> Value<'a> {
    fn bytes(&self) -> Result<&'a [u8], OnnxError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(OnnxError::Corrupt("expected a length-delimited field")),
        }
    }

    fn string(&self) -> Result<String, OnnxError> {
        String::from_utf8(self.bytes()?.to_vec())
            .map_err(|_| OnnxError::Corrupt("a name is not UTF-8"))
    }

    fn varint(&self) -> Result<u64, OnnxError> {
        match self {
            Value::Varint(v) => Ok(*v),
            _ => Err(OnnxError::Corrupt("expected a varint field")),
        }
    }

    /// A repeated varint field, packed or not.
    fn for_each_varint(&self, mut f: impl FnMut(u64)) -> Result<(), OnnxError> {
        match self {
            Value::Varint(v) => f(*v),
            Value::Bytes(mut b) => {
                while !b.is_empty() {
                    f(read_varint(&mut b)?);
                }
            }
            _ => return Err(OnnxError::Corrupt("expected varints")),
        }
        Ok(())
    }

    /// A repeated 32-bit field, packed or not.
    fn for_each_fixed32(&self, mut f: impl FnMut(u32)) -> Result<(), OnnxError> {
        match self {
            Value::Fixed32(v) => f(*v),
            Value::Bytes(b) if b.len() % 4 == 0 => {
                for c in b.chunks_exact(4) {
                    f(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                }
            }
            _ => return Err(OnnxError::Corrupt("expected 32-bit values")),
        }
        Ok(())
    }
}

/// The fields of one protobuf message, in order; stops at the first error.
struct Fields<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            failed: false,
        }
    }

    fn next_field(&mut self) -> Result<(u64, Value<'a>), OnnxError> {
        let key = read_varint(&mut self.rest)?;
        let value = match key & 7 {
            0 => Value::Varint(read_varint(&mut self.rest)?),
            1 => {
                take(&mut self.rest, 8)?;
                Value::Fixed64
            }
            2 => {
                let len = usize::try_from(read_varint(&mut self.rest)?)
                    .map_err(|_| OnnxError::Corrupt("length out of range"))?;
                Value::Bytes(take(&mut self.rest, len)?)
            }
            5 => {
                let b = take(&mut self.rest, 4)?;
                Value::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            _ => return Err(OnnxError::Corrupt("unknown wire type")),
        };
        Ok((key >> 3, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Value<'a>), OnnxError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let field = self.next_field();
        self.failed = field.is_err();
        Some(field)
    }
}

fn take<'a>(rest: &mut &'a [u8], len: usize) -> Result<&'a [u8], OnnxError> {
    if len > rest.len() {
        return Err(OnnxError::Corrupt("a field runs past the end"));
    }
    let (head, tail) = rest.split_at(len);
    *rest = tail;
    Ok(head)
}

fn read_varint(rest: &mut &[u8]) -> Result<u64, OnnxError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, tail) = rest
            .split_first()
            .ok_or(OnnxError::Corrupt("a number runs past the end"))?;
        *rest = tail;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(OnnxError::Corrupt("a number is longer than 10 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn field(number: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    fn int_field(number: u64, v: u64, out: &mut Vec<u8>) {
        varint(number << 3, out);
        varint(v, out);
    }

    /// A float tensor, its data in raw_data or in float_data.
    fn tensor(name: &str, dims: &[u64], values: &[f32], raw: bool) -> Vec<u8> {
        let mut t = Vec::new();
        if raw {
            let mut d = Vec::new();
            dims.iter().for_each(|&x| varint(x, &mut d));
            field(1, &d, &mut t);
        } else {
            dims.iter().for_each(|&x| int_field(1, x, &mut t));
        }
        int_field(2, FLOAT as u64, &mut t);
        field(8, name.as_bytes(), &mut t);
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        field(if raw { 9 } else { 4 }, &bytes, &mut t);
        t
    }

    fn model(tensors: &[Vec<u8>]) -> Vec<u8> {
        let mut graph = Vec::new();
        let mut node = Vec::new();
        field(1, b"x", &mut node);
        field(1, b"w", &mut node);
        field(2, b"y", &mut node);
        field(3, b"/layer/Conv", &mut node);
        field(4, b"Conv", &mut node);
        let mut attribute = Vec::new();
        field(1, b"pads", &mut attribute);
        field(8, &[2, 3], &mut attribute);
        field(5, &attribute, &mut node);
        let mut group = Vec::new();
        field(1, b"group", &mut group);
        int_field(3, 4, &mut group);
        field(5, &group, &mut node);
        field(1, &node, &mut graph);
        for t in tensors {
            field(5, t, &mut graph);
        }
        let mut input = Vec::new();
        field(1, b"x", &mut input);
        field(11, &input, &mut graph);
        let mut m = Vec::new();
        int_field(1, 8, &mut m); // ir_version, skipped
        field(7, &graph, &mut m);
        m
    }

    #[test]
    fn reads_initializers_nodes_and_attributes() {
        let bytes = model(&[
            tensor("w", &[2, 3], &[1., 2., 3., 4., 5., 6.], true),
            tensor("b", &[3], &[7., 8., 9.], false),
        ]);
        let m = OnnxModel::parse(&bytes).unwrap();
        assert_eq!(m.initializers.len(), 2);
        let w = m.initializers[0].to_tensor(&Device::Cpu).unwrap();
        assert_eq!(
            w.to_vec2::<f32>().unwrap(),
            vec![vec![1., 2., 3.], vec![4., 5., 6.]]
        );
        let b = m.initializers[1].to_tensor(&Device::Cpu).unwrap();
        assert_eq!(b.to_vec1::<f32>().unwrap(), vec![7., 8., 9.]);
        let users: Vec<_> = m
            .consumers("w")
            .map(|(n, slot)| (n.name.as_str(), slot))
            .collect();
        assert_eq!(users, [("/layer/Conv", 1)]);
        let conv = &m.nodes[0];
        assert_eq!(conv.ints("pads"), Some(&[2, 3][..]));
        assert_eq!(conv.ints("group"), Some(&[4][..]));
        assert_eq!(conv.ints("strides"), None);
        assert_eq!(m.inputs, ["x"]);
    }

    #[test]
    fn types_and_shapes_are_checked_on_conversion() {
        let wrong = model(&[tensor("w", &[2, 3], &[1., 2.], true)]);
        let m = OnnxModel::parse(&wrong).unwrap();
        assert!(matches!(
            m.initializers[0].to_tensor(&Device::Cpu),
            Err(OnnxError::ShapeMismatch { .. })
        ));
        // An int32 constant parses, and only fails if converted.
        let mut t = Vec::new();
        int_field(2, 6, &mut t);
        field(8, b"i32", &mut t);
        field(9, &[0; 4], &mut t);
        let bytes = model(&[t]);
        let m = OnnxModel::parse(&bytes).unwrap();
        assert!(!m.initializers[0].is_float());
        assert!(matches!(
            m.initializers[0].to_tensor(&Device::Cpu),
            Err(OnnxError::UnsupportedType { data_type: 6, .. })
        ));
        // float16 in int32_data
        let mut t = Vec::new();
        int_field(1, 2, &mut t);
        int_field(2, FLOAT16 as u64, &mut t);
        field(8, b"h", &mut t);
        field(5, &[0x80, 0x78, 0x80, 0x7c], &mut t); // 0x3c00 = 1.0, 0x3e00 = 1.5
        let bytes = model(&[t]);
        let m = OnnxModel::parse(&bytes).unwrap();
        let h = m.initializers[0].to_tensor(&Device::Cpu).unwrap();
        let h = h.to_dtype(DType::F32).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(h, vec![1.0, 1.5]);
    }

    #[test]
    fn corrupt_bytes_are_errors_not_panics() {
        let good = model(&[tensor("w", &[2, 2], &[1., 2., 3., 4.], true)]);
        let mut errors = 0;
        for cut in 0..good.len() {
            // Every prefix either parses (it ends on a field boundary) or errs.
            if let Ok(m) = OnnxModel::parse(&good[..cut]) {
                m.initializers
                    .iter()
                    .for_each(|t| drop(t.to_tensor(&Device::Cpu)));
            } else {
                errors += 1;
            }
        }
        assert!(errors > good.len() / 2, "most cuts must be detected");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..5000 {
            let mut bytes = good.clone();
            for _ in 0..3 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let i = seed as usize % bytes.len();
                bytes[i] = (seed >> 32) as u8;
            }
            if let Ok(m) = OnnxModel::parse(&bytes) {
                m.initializers
                    .iter()
                    .for_each(|t| drop(t.to_tensor(&Device::Cpu)));
            }
        }
        assert!(matches!(OnnxModel::parse(&[]), Err(OnnxError::NoGraph)));
        // A length of 2^62 must not allocate.
        let mut huge = Vec::new();
        varint(7 << 3 | 2, &mut huge);
        varint(1 << 62, &mut huge);
        assert!(matches!(
            OnnxModel::parse(&huge),
            Err(OnnxError::Corrupt(_))
        ));
        // Neither must dims whose product overflows.
        let t = tensor("w", &[u64::MAX >> 1, u64::MAX >> 1], &[1.], true);
        let bytes = model(&[t]);
        let m = OnnxModel::parse(&bytes).unwrap();
        assert!(matches!(
            m.initializers[0].to_tensor(&Device::Cpu),
            Err(OnnxError::ShapeMismatch { .. })
        ));
        // An 11-byte varint
        assert!(matches!(
            OnnxModel::parse(&[0x80; 11]),
            Err(OnnxError::Corrupt(_))
        ));
    }
}
