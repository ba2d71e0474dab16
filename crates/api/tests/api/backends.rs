//! `on_every_backend!(case, ...)`: each `async fn case(app: TestApp)` of the calling module
//! run as a test on SQLite, PostgreSQL and MariaDB (the server ones print SKIP without their
//! URL).

#[macro_export]
macro_rules! on_every_backend {
    ($($case:ident),*) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case($crate::support::TestApp::new().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(app) = $crate::support::TestApp::postgres().await {
                        super::$case(app).await;
                    }
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(app) = $crate::support::TestApp::mysql().await {
                        super::$case(app).await;
                    }
                }
            )*
        }
    };
}
