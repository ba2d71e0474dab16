//! [`Problem`]: a refusal as the console shows it, in the words and with the code the API
//! would answer it with (the application's [`coupond_app::AppError`], or the API's own
//! parsing of a form's body).

/// A problem+json answer, as the console shows it.
#[derive(Clone, Debug, Default)]
pub struct Problem {
    pub status: u16,
    pub code: String,
    /// The field it names, if any (shown next to that field).
    pub field: Option<String>,
    pub detail: String,
    /// Every invalid field when the API names more than one (`errors`): field and what is
    /// wrong with it.
    pub fields: Vec<(String, String)>,
}

impl From<coupond_app::AppError> for Problem {
    /// An application refusal as the console shows it: in the words and with the code the API
    /// would answer it with.
    fn from(e: coupond_app::AppError) -> Self {
        Problem::from(coupond_api::ApiError::from(e))
    }
}

impl From<coupond_api::ApiError> for Problem {
    /// A refusal of the API's own parsing (a form's body read as the API reads it), or of the
    /// application, as the API would answer it.
    fn from(e: coupond_api::ApiError) -> Self {
        let fields = match &e {
            coupond_api::ApiError::App(coupond_app::AppError::InvalidFields(all)) => all
                .iter()
                .map(|f| (f.field.clone(), f.message.clone()))
                .collect(),
            _ => Vec::new(),
        };
        let (code, field, detail) = e.parts();
        Problem {
            status: e.status().as_u16(),
            code: code.to_owned(),
            field,
            detail,
            fields,
        }
    }
}
