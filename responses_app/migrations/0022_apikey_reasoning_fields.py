from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("responses_app", "0021_response_node"),
    ]

    operations = [
        migrations.AddField(
            model_name="apikey",
            name="reasoning_fields",
            field=models.CharField(
                choices=[
                    ("both", "Both: reasoning and reasoning_content"),
                    ("reasoning", "reasoning only (vLLM 0.16 and later)"),
                    ("reasoning_content", "reasoning_content only (vLLM before 0.16, DeepSeek)"),
                ],
                default="both",
                max_length=20,
            ),
        ),
    ]
