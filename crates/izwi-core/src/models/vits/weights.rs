//! The weights of a Piper ONNX voice under the module paths of piper's PyTorch VITS
//! (`enc_p.encoder.attn_layers.0.conv_q.weight`, ...), and the hyperparameters of every
//! convolution as the graph records them.
//!
//! The exporter names most initializers after their parameter, but not all:
//! - weight-normed convolutions that were not un-normed before export (the flow's WN
//!   layers) are folded into new constants named `onnx::Conv_N`;
//! - a parameter can inherit a name from the graph's input list (piper names four
//!   inputs, so a single-speaker voice's text embedding comes out as `sid`);
//! - a parameter that only feeds constant ops is folded with them (the duration
//!   predictor's affine flow stores `exp(-logs)` as `/dp/flows.0/Exp_output_0`).
//!
//! So a float initializer read by a Conv, ConvTranspose or Gather node is named after
//! that node (`/flow/flows.0/enc/in_layers.0/Conv` input 1 → `flow.flows.0.enc.
//! in_layers.0.weight`), the folded `exp(-logs)` is turned back into `logs`, and the
//! rest keep their own names.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use candle_core::{DType, Device, Tensor};

use crate::models::shared::onnx::{Node, OnnxError, OnnxModel};

/// Stride, padding, dilation and groups of one convolution node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvAttrs {
    pub stride: usize,
    /// Zeros added before and after the sequence.
    pub pads: (usize, usize),
    pub dilation: usize,
    pub groups: usize,
}

impl Default for ConvAttrs {
    /// ONNX's defaults for absent attributes.
    fn default() -> Self {
        Self {
            stride: 1,
            pads: (0, 0),
            dilation: 1,
            groups: 1,
        }
    }
}

/// Named f32 tensors plus the convolution attributes, keyed by module path. Lookups
/// of absent names are recorded rather than failing at once, so that loading a voice
/// reports every missing weight together ([`Weights::finish`]).
pub struct Weights {
    /// Behind a RefCell so a module can take its weights out ([`Weights::take`]).
    tensors: RefCell<HashMap<String, Tensor>>,
    convs: HashMap<String, ConvAttrs>,
    missing: RefCell<BTreeSet<String>>,
    /// Stands in for absent tensors until [`Weights::finish`] reports them.
    placeholder: Tensor,
}

impl Weights {
    pub fn from_onnx(model: &OnnxModel, device: &Device) -> Result<Self, OnnxError> {
        let mut tensors = HashMap::new();
        for init in model.initializers.iter().filter(|i| i.is_float()) {
            let tensor = init.to_tensor(device)?.to_dtype(DType::F32)?;
            let mut names: Vec<String> = model
                .consumers(&init.name)
                .filter_map(|(node, slot)| parameter_of(node, slot))
                .collect();
            if names.is_empty() {
                if let Some(module) = folded_exp(&init.name) {
                    // exp(-logs) → logs
                    tensors.insert(format!("{module}.logs"), tensor.log()?.neg()?);
                    continue;
                }
                names.push(init.name.clone());
            }
            for name in names {
                tensors.insert(name, tensor.clone());
            }
        }
        let mut convs = HashMap::new();
        for node in &model.nodes {
            if node.op_type == "Conv" || node.op_type == "ConvTranspose" {
                if let Some(path) = module_path(&node.name) {
                    convs.insert(path, conv_attrs(node)?);
                }
            }
        }
        Ok(Self {
            tensors: RefCell::new(tensors),
            convs,
            missing: RefCell::default(),
            placeholder: Tensor::zeros(0, DType::F32, device)?,
        })
    }

    /// The tensor `name`; if absent, the name is recorded and an empty tensor stands in.
    pub fn get(&self, name: &str) -> Tensor {
        self.require(name)
            .unwrap_or_else(|| self.placeholder.clone())
    }

    /// The tensor `name`; if absent, the name is recorded and `None` returned.
    pub fn require(&self, name: &str) -> Option<Tensor> {
        let tensor = self.tensors.borrow().get(name).cloned();
        self.recorded(name, tensor)
    }

    /// The tensor `name`, taken out (the weights then no longer hold it, so a module
    /// that repacks it lets the original go); if absent, recorded as [`Self::require`]
    /// does. Only for a tensor nothing else reads: a later lookup of it (or a
    /// [`Self::has_module`] or [`Self::count`] that only it answers) would find it
    /// missing.
    pub fn take(&self, name: &str) -> Option<Tensor> {
        let tensor = self.tensors.borrow_mut().remove(name);
        self.recorded(name, tensor)
    }

    /// `tensor`, the lookup of `name`, with `name` recorded as missing if it is None.
    fn recorded(&self, name: &str, tensor: Option<Tensor>) -> Option<Tensor> {
        if tensor.is_none() {
            self.missing.borrow_mut().insert(name.to_string());
        }
        tensor
    }

    /// Whether the module at `path` has any weight or convolution node. Missing
    /// weights are then reported by the lookups that need them.
    pub fn has_module(&self, path: &str) -> bool {
        let prefix = format!("{path}.");
        self.convs.contains_key(path)
            || self.tensors.borrow().keys().any(|k| k.starts_with(&prefix))
    }

    /// How many numbered modules there are: `path(0)`, `path(1)`, ... while present.
    /// None at all is recorded as `path(0)` missing.
    pub fn count(&self, path: impl Fn(usize) -> String) -> usize {
        let n = (0..).take_while(|&i| self.has_module(&path(i))).count();
        if n == 0 {
            self.missing
                .borrow_mut()
                .insert(format!("{} (module)", path(0)));
        }
        n
    }

    pub fn get_optional(&self, name: &str) -> Option<Tensor> {
        self.tensors.borrow().get(name).cloned()
    }

    /// The attributes of the convolution at module path `path`.
    pub fn conv_attrs(&self, path: &str) -> ConvAttrs {
        self.convs.get(path).cloned().unwrap_or_else(|| {
            self.missing
                .borrow_mut()
                .insert(format!("{path} (convolution node)"));
            ConvAttrs::default()
        })
    }

    /// The result of building a model from these weights, unless names were missing:
    /// then the error lists them all (a build step may have failed on a stand-in).
    pub fn finish<T>(&self, built: candle_core::Result<T>) -> Result<T, WeightsError> {
        let missing = self.missing.borrow();
        if !missing.is_empty() {
            return Err(WeightsError::Missing(missing.iter().cloned().collect()));
        }
        Ok(built?)
    }
}

#[cfg(test)]
impl Weights {
    /// Empty weights to fill by hand.
    pub fn for_tests() -> Self {
        Self {
            tensors: RefCell::default(),
            convs: HashMap::new(),
            missing: RefCell::default(),
            placeholder: Tensor::zeros(0, DType::F32, &Device::Cpu).unwrap(),
        }
    }

    pub fn insert(&mut self, name: &str, tensor: Tensor) {
        self.tensors.get_mut().insert(name.to_string(), tensor);
    }

    pub fn insert_conv(&mut self, path: &str, attrs: ConvAttrs) {
        self.convs.insert(path.to_string(), attrs);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("the voice lacks {} weight(s): {}", .0.len(), .0.join(", "))]
    Missing(Vec<String>),
    #[error("the voice's weights do not fit together: {0}")]
    Candle(#[from] candle_core::Error),
}

/// `/flow/flows.0/enc/in_layers.0/Conv` → `flow.flows.0.enc.in_layers.0`.
fn module_path(node_name: &str) -> Option<String> {
    let (path, _op) = node_name.strip_prefix('/')?.rsplit_once('/')?;
    Some(path.replace('/', "."))
}

/// The parameter a node reads in input `slot`, if the node is a layer with weights.
fn parameter_of(node: &Node, slot: usize) -> Option<String> {
    let suffix = match (node.op_type.as_str(), slot) {
        ("Conv" | "ConvTranspose", 1) | ("Gather", 0) => "weight",
        ("Conv" | "ConvTranspose", 2) => "bias",
        _ => return None,
    };
    Some(format!("{}.{suffix}", module_path(&node.name)?))
}

/// `/dp/flows.0/Exp_output_0` → `dp.flows.0`.
fn folded_exp(name: &str) -> Option<String> {
    let module = name.strip_prefix('/')?.strip_suffix("/Exp_output_0")?;
    Some(module.replace('/', "."))
}

/// Larger strides, paddings, dilations or group counts are no real voice's, and would
/// make a hostile file ask for absurd allocations.
const MAX_CONV_ATTRIBUTE: i64 = 1 << 16;

fn conv_attrs(node: &Node) -> Result<ConvAttrs, OnnxError> {
    let value = |attribute: &'static str, index: usize, default: usize| match node
        .ints(attribute)
        .and_then(|v| v.get(index))
    {
        None => Ok(default),
        Some(&v) if (0..=MAX_CONV_ATTRIBUTE).contains(&v) => Ok(v as usize),
        Some(_) => Err(OnnxError::AttributeOutOfRange {
            node: node.name.clone(),
            attribute,
        }),
    };
    Ok(ConvAttrs {
        stride: value("strides", 0, 1)?,
        pads: (value("pads", 0, 0)?, value("pads", 1, 0)?),
        dilation: value("dilations", 0, 1)?,
        groups: value("group", 0, 1)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::shared::onnx::Attribute;

    #[test]
    fn names_come_from_the_consuming_node() {
        assert_eq!(
            module_path("/flow/flows.0/enc/in_layers.0/Conv").as_deref(),
            Some("flow.flows.0.enc.in_layers.0")
        );
        assert_eq!(module_path("/Gather"), None);
        assert_eq!(module_path("sid"), None);
        let gather = Node {
            name: "/enc_p/emb/Gather".into(),
            op_type: "Gather".into(),
            ..Node::default()
        };
        assert_eq!(
            parameter_of(&gather, 0).as_deref(),
            Some("enc_p.emb.weight")
        );
        assert_eq!(parameter_of(&gather, 1), None);
        assert_eq!(
            folded_exp("/dp/flows.0/Exp_output_0").as_deref(),
            Some("dp.flows.0")
        );
        assert_eq!(folded_exp("/Exp_output_0"), None);
        assert_eq!(folded_exp("dp.flows.0.logs"), None);
    }

    #[test]
    fn convolution_attributes_are_bounded() {
        let conv = |pads: Vec<i64>| Node {
            name: "/dec/ups.0/ConvTranspose".into(),
            op_type: "ConvTranspose".into(),
            attributes: vec![
                Attribute {
                    name: "strides".into(),
                    ints: vec![8],
                },
                Attribute {
                    name: "pads".into(),
                    ints: pads,
                },
            ],
            ..Node::default()
        };
        assert_eq!(
            conv_attrs(&conv(vec![4, 4])).unwrap(),
            ConvAttrs {
                stride: 8,
                pads: (4, 4),
                dilation: 1,
                groups: 1
            }
        );
        for pads in [vec![-1, 0], vec![0, 1 << 40]] {
            assert!(matches!(
                conv_attrs(&conv(pads)),
                Err(OnnxError::AttributeOutOfRange {
                    attribute: "pads",
                    ..
                })
            ));
        }
    }
}
