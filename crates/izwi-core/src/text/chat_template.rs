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

    #[test]
    fn a_broken_template_is_refused_at_load() {
        assert!(ChatTemplate::new("{% for %}", "", "").is_err());
    }
}
