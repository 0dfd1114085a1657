//! A model's chat template (Jinja, as Hugging Face and GGUF files ship them), rendered
//! with minijinja into the prompt text the model was trained on.

use minijinja::{context, Environment, Error as JinjaError, ErrorKind};
use serde::{Deserialize, Serialize};

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the chat template cannot be used: {0}")]
pub struct ChatTemplateError(String);

pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token` and `eos_token` are the texts templates insert.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, ChatTemplateError> {
        let mut env = Environment::new();
        // Templates written for Python's Jinja call string methods (`.strip()`,
        // `.startswith()`) and raise errors on conversations they refuse.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<String, JinjaError> {
                Err(JinjaError::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| ChatTemplateError(e.to_string()))?;
        Ok(Self {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// The prompt for `messages`, ending with the opening of the assistant's reply.
    pub fn render(&self, messages: &[ChatMessage]) -> Result<String, ChatTemplateError> {
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| ChatTemplateError(e.to_string()))?;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => true,
                bos_token => self.bos_token,
                eos_token => self.eos_token,
                // Qwen3's switch: a spoken conversation wants the answer, not the reasoning.
                enable_thinking => false,
            })
            .map_err(|e| ChatTemplateError(detail(&e)))
    }
}

/// minijinja's message and, for errors raised by the template, their cause.
fn detail(error: &JinjaError) -> String {
    match std::error::Error::source(error) {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHATML: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    #[test]
    fn renders_a_conversation_with_the_generation_prompt() {
        let template = ChatTemplate::new(CHATML, "<s>", "</s>").unwrap();
        let text = template
            .render(&[
                ChatMessage::new("system", "Be brief."),
                ChatMessage::new("user", "Hi"),
            ])
            .unwrap();
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn python_string_methods_and_raised_errors_work() {
        let source = "{% if messages[0].role != 'user' %}{{ raise_exception('must start with user') }}{% endif %}{{ bos_token }}{{ messages[0].content.strip() }}";
        let template = ChatTemplate::new(source, "<s>", "</s>").unwrap();
        let text = template
            .render(&[ChatMessage::new("user", "  hi ")])
            .unwrap();
        assert_eq!(text, "<s>hi");
        let err = template
            .render(&[ChatMessage::new("assistant", "x")])
            .unwrap_err();
        assert!(err.to_string().contains("must start with user"), "{err}");
    }

    /// The constructs Qwen3's and Llama 3.x's own templates are built from: a namespace
    /// updated in a loop over the reversed messages, `is string`, `.split()`,
    /// `.lstrip()`, `|trim`, tests on functions and variables a caller may not define
    /// (`strftime_now`, `tools`), and the thinking switch.
    #[test]
    fn the_constructs_of_qwen3_and_llama3_templates_render() {
        let source = r#"
{%- if not date_string is defined %}{%- if strftime_now is defined %}{%- set date_string = strftime_now("%d %b %Y") %}{%- else %}{%- set date_string = "1 Jan 2026" %}{%- endif %}{%- endif %}
{%- if tools is not defined or tools is none %}{%- set tools = [] %}{%- endif %}
{%- set ns = namespace(found=false, last_user=-1) %}
{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}{%- if not ns.found and message.role == "user" and message.content is string %}{%- set ns.found = true %}{%- set ns.last_user = index %}{%- endif %}{%- endfor %}
{{- "[" ~ date_string ~ "|" ~ tools|length ~ "|" ~ ns.last_user ~ "]" }}
{%- for message in messages %}
{%- set content = message.content %}
{%- if message.role == "assistant" and "</think>" in content %}{%- set content = content.split("</think>")[-1].lstrip("\n") %}{%- endif %}
{{- "<" ~ message.role ~ ">" ~ content|trim }}
{%- endfor %}
{%- if add_generation_prompt %}{{- "<assistant>" }}{%- if enable_thinking is defined and enable_thinking is false %}{{- "<think></think>" }}{%- endif %}{%- endif %}"#;
        let template = ChatTemplate::new(source, "", "").unwrap();
        let text = template
            .render(&[
                ChatMessage::new("user", " Hi "),
                ChatMessage::new("assistant", "<think>hmm</think>\n\nHello."),
                ChatMessage::new("user", "Bye"),
            ])
            .unwrap();
        assert_eq!(
            text,
            "[1 Jan 2026|0|2]<user>Hi<assistant>Hello.<user>Bye<assistant><think></think>"
        );
    }

    #[test]
    fn a_broken_template_is_refused_at_load() {
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
    }
}
